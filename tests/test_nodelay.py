"""physai.interface.nodelay: Jupyter Server's kernel connection with Nagle's algorithm off on the browser's websocket.

``benchmarks/bench_panel.py`` runs the widgets on a JupyterLab started with it (its quick mode runs in ``make test``);
here, that it sets the option before the connection starts and changes nothing else.
"""

import pytest

pytest.importorskip('jupyter_server')

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection  # noqa: E402

from physai.interface import nodelay  # noqa: E402


class Handler:
    """The part of a kernel websocket handler the connection touches before it connects."""

    def __init__(self, calls):
        self.calls = calls

    def set_nodelay(self, value):
        self.calls.append(('set_nodelay', value))


def test_the_connection_turns_nagle_off_then_connects_as_jupyter_server_does(monkeypatch):
    calls = []
    monkeypatch.setattr(ZMQChannelsWebsocketConnection, 'connect', lambda self: calls.append('connect') or 'future')
    connection = nodelay.NoDelayConnection.__new__(nodelay.NoDelayConnection)
    connection._trait_values['websocket_handler'] = Handler(calls)
    assert connection.connect() == 'future'
    assert calls == [('set_nodelay', True), 'connect']


def test_it_is_a_kernel_websocket_connection_jupyter_server_accepts():
    from jupyter_server.serverapp import ServerApp
    app = ServerApp(kernel_websocket_connection_class='physai.interface.nodelay.NoDelayConnection')
    assert app.kernel_websocket_connection_class is nodelay.NoDelayConnection
    assert issubclass(nodelay.NoDelayConnection, ZMQChannelsWebsocketConnection)
