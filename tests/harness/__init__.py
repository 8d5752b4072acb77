"""One harness per kind of real part the tests drive: an IPython shell, a Jupyter kernel, a Phoenix server."""
