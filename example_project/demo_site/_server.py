"""The loopback HTTP server: stdlib ``ThreadingHTTPServer``, HTTP/1.1, quiet."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import _html as h
from ._build import HTML_TYPE, Site, build_site


def make_handler(site: Site) -> type[BaseHTTPRequestHandler]:
    """A request handler class that serves ``site.pages`` by request target."""

    class DemoSiteHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "DemoSite/1.0"
        timeout = 30  # idle keep-alive connections are closed after this many seconds

        def do_GET(self) -> None:
            self._respond(send_body=True)

        def do_HEAD(self) -> None:
            self._respond(send_body=False)

        def _respond(self, *, send_body: bool) -> None:
            page = site.pages.get(self.path)
            if page is None:
                status, headers = 404, {"Content-Type": HTML_TYPE}
                body = h.not_found(self.path).encode("utf-8")
            else:
                status, headers, body = page.status, page.headers, page.body
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Silence the default one-line-per-request logging to stderr."""

    return DemoSiteHandler


def serve(
    host: str = "127.0.0.1", port: int = 0, site: Site | None = None
) -> tuple[ThreadingHTTPServer, int]:
    """Serve the site in a daemon thread; returns the server and its bound port.

    Stop it with ``server.shutdown()`` then ``server.server_close()``. ``port=0`` picks a free
    port. ``site`` defaults to ``build_site()``.
    """
    server = ThreadingHTTPServer((host, port), make_handler(site or build_site()))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="demo-site", daemon=True)
    thread.start()
    return server, server.server_address[1]
