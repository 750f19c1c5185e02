"""The physics as equations, in NumPy: no MuJoCo here. Every law is tested against ``mj_step`` in ``tests/``."""
