"""Start Phoenix's server with its OTLP/gRPC receiver bound to 127.0.0.1 instead of every interface.

Phoenix binds gRPC to ``[::]`` with no setting to change it; the tests serve nothing beyond loopback.
"""

from __future__ import annotations

import sys

from grpc.aio import _server


def _loopback(add_port):  # type: ignore[no-untyped-def]
    def add(self, address: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        return add_port(self, address.replace("[::]:", "127.0.0.1:"), *args, **kwargs)

    return add


_server.Server.add_insecure_port = _loopback(_server.Server.add_insecure_port)  # type: ignore[method-assign]

if __name__ == "__main__":
    from phoenix.server.main import main

    sys.argv[0] = "phoenix"
    sys.exit(main())
