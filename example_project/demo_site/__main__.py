"""``python -m demo_site``: serve the demo site in the foreground, or dump its ground truth."""

from __future__ import annotations

import argparse
import json
import sys
from http.server import ThreadingHTTPServer

from ._build import DEFAULT_SEED, build_site
from ._server import make_handler


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m demo_site", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    parser.add_argument("--port", type=int, default=8000, help="port (0 picks a free one)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="generation seed")
    parser.add_argument(
        "--dump-truth", metavar="FILE", help="write the ground truth as JSON and exit"
    )
    args = parser.parse_args(argv)
    site = build_site(args.seed)
    if args.dump_truth:
        with open(args.dump_truth, "w", encoding="utf-8") as fh:
            json.dump(site.to_json(), fh, ensure_ascii=False, indent=2)
            fh.write("\n")
        print(f"wrote {len(site.truth)} truth entries to {args.dump_truth}")
        return 0
    server = ThreadingHTTPServer((args.host, args.port), make_handler(site))
    server.daemon_threads = True
    port = server.server_address[1]
    print(f"Serving the demo site on http://{args.host}:{port}/ (Ctrl+C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
