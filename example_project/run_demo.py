"""The main job: serve the bundled demo site on loopback, crawl it, then `scrapy neardup-stats`.

    python example_project/run_demo.py [--backend minhash|simhash|spotsigs|exact]
                                       [--decision contained|similar]

Nothing to start by hand: the site runs in this process on a free port for as long as the
crawl does. The state of the last run is kept in example_project/.neardup-state.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from demo_site import build_site, serve  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, help="NEARDUP_BACKEND for this run")
    parser.add_argument("--decision", default=None, help="NEARDUP_DECISION for this run")
    args = parser.parse_args()
    state = HERE / ".neardup-state"
    shutil.rmtree(state, ignore_errors=True)
    server, port = serve("127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{port}/"
        print(f"demo site at {url}", flush=True)
        crawl = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"start_url={url}"]
        if args.backend:
            crawl += ["-s", f"NEARDUP_BACKEND={args.backend}"]
        if args.decision:
            crawl += ["-s", f"NEARDUP_DECISION={args.decision}"]
        subprocess.run(crawl, cwd=HERE, check=True)
    finally:
        server.shutdown()
        server.server_close()
    items = [json.loads(line) for line in (HERE / "items.jsonl").read_text().splitlines() if line]
    site = build_site()
    near = sum(1 for item in items if item.get("near_duplicate_of"))
    print(
        f"\n{len(items)} items kept; the site holds {len(site.expected_unique_docs())} "
        f"distinct documents and {len(site.near_copies())} copies with a headline or source "
        f"line of their own, which the default decision keeps ({near} kept and recorded as "
        "near their original; --decision similar drops them)\n",
        flush=True,
    )
    subprocess.run([sys.executable, "-m", "scrapy", "neardup-stats"], cwd=HERE, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
