"""A kernel connection for Jupyter Server that sends each message at once: the widgets' replies without a 40 ms stall.

A widget's reply crosses Jupyter Server's kernel websocket as a few small frames written back to back (the kernel's
"busy" status, the reply, "idle"). Jupyter Server (2.21) leaves Nagle's algorithm on for that socket, so the second
frame waits until the browser acknowledges the first, and a browser that has nothing to send delays its
acknowledgement: on Linux by at least 40 ms (``TCP_DELACK_MIN``, HZ/25 in the kernel's ``include/net/tcp.h``). Tornado
says so in ``WebSocketHandler.set_nodelay``: "small messages may be delayed and/or combined to minimize the number of
packets sent". Measured here on a local JupyterLab 4.6.6 (``benchmarks/bench_panel.py``, a bare widget that answers at
once, 40 round trips): 48 ms median, 19 ms with this connection; the kernel alone over ZMQ (jupyter_client, no server
or browser) answers in 4 ms.

Start JupyterLab with it to present the panels live::

    jupyter lab --ServerApp.kernel_websocket_connection_class=physai.interface.nodelay.NoDelayConnection

It changes one socket option of the browser's kernel connection and nothing else. Colab and VS Code do not use
Jupyter Server's websocket and need nothing.
"""

from __future__ import annotations

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection


class NoDelayConnection(ZMQChannelsWebsocketConnection):
    """Jupyter Server's ZMQ kernel connection with ``TCP_NODELAY`` set on the browser's websocket."""

    def connect(self):
        self.websocket_handler.set_nodelay(True)
        return super().connect()
