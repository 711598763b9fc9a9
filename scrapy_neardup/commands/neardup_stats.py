"""``scrapy neardup-stats``: what a crawl's saved state holds (see :mod:`scrapy_neardup.report`).

Scrapy imports this module in every ``scrapy`` command to list the commands, so it imports
nothing heavy: the report is imported when the command runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_neardup.exceptions import NearDupError

TOP_CLUSTERS = 10
MAX_DROPS = 100  # scrapy_neardup.report_html.MAX_DROPS, not imported here (kept light)


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    # Not annotated: Scrapy 2.13 declares it an instance variable, later releases a ClassVar.
    default_settings = {"LOG_ENABLED": False}  # noqa: RUF012

    def syntax(self) -> str:
        return (
            "[options] [STATE_DIR] | --redis-url URL [--key-prefix PREFIX] [--reset]"
            " [--html FILE [--max-drops N]] [--drops FILE]"
        )

    def short_desc(self) -> str:
        return "Show what scrapy-neardup recorded for a crawl (URLs, duplicates, clusters)"

    def long_desc(self) -> str:
        return (
            "Reads the scrapy-neardup state of a crawl: STATE_DIR, else NEARDUP_STATE_DIR, "
            "else JOBDIR/neardup (pass -s JOBDIR=... as for the crawl). With --redis-url, the "
            "crawl shared through Redis under --key-prefix (else NEARDUP_KEY_PREFIX; the crawl "
            "used the spider's name when that was unset); --reset deletes its keys, and only "
            "those. --html FILE writes one self-contained page to audit the drops: the "
            "clusters and, for each drop, both texts side by side with what they share and "
            "what differs (texts are kept by crawls run with NEARDUP_KEEP_TEXT), riskiest "
            "first; --drops FILE writes one JSON line a drop for programs."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print JSON for machines")
        parser.add_argument("--top", type=int, default=TOP_CLUSTERS, help="largest clusters shown")
        parser.add_argument("--redis-url", help="read the crawl's state from this Redis")
        parser.add_argument(
            "--key-prefix", help="the crawl's NEARDUP_KEY_PREFIX (default: the setting)"
        )
        parser.add_argument(
            "--reset",
            action="store_true",
            help="delete the crawl's keys ({prefix}...:neardup:*) from Redis, and only those",
        )
        parser.add_argument(
            "--html",
            metavar="FILE",
            help="write one self-contained HTML page to audit the drops (opens offline)",
        )
        parser.add_argument(
            "--max-drops",
            type=int,
            default=MAX_DROPS,
            help=f"drops shown with their texts in the --html page (default {MAX_DROPS})",
        )
        parser.add_argument(
            "--drops",
            metavar="FILE",
            help="write one JSON line a drop (dropped, kept, method, similarity, containment, "
            "lost_words, lost), riskiest first",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from scrapy_neardup import report, report_html

        crawl = self._redis_crawl(args, opts) if opts.redis_url or opts.reset else self._dir(args)
        out = None  # the file being written
        try:
            if isinstance(crawl, tuple) and opts.reset:
                deleted = report.reset_redis(*crawl)
                print(f"neardup-stats: deleted {deleted} keys of crawl {crawl[1]!r} in {crawl[0]}")
            elif opts.html or opts.drops:
                if opts.max_drops < 0:
                    raise UsageError("--max-drops must be 0 or more")
                if out := opts.drops:
                    count = report_html.drops(crawl, out)
                    print(f"neardup-stats: wrote {out}: {count} drops")
                if out := opts.html:
                    page, counts = report_html.page(crawl, max_drops=opts.max_drops)
                    Path(out).write_text(page, encoding="utf-8")
                    print(
                        f"neardup-stats: wrote {out}: {counts['shown']} of {counts['drops']} "
                        f"drops shown, {counts['texts']} with both texts, {counts['lossy']} "
                        "lose text"
                    )
            else:
                summary = report.summary_of(crawl, opts.top)
                print(json.dumps(summary, indent=2) if opts.json else report.render(summary))
        except NearDupError as exc:
            print(f"neardup-stats: {exc}")
            self.exitcode = 1
        except OSError as exc:
            if out is None:
                raise
            print(f"neardup-stats: cannot write {out}: {exc.strerror or exc}")
            self.exitcode = 1

    def _dir(self, args: list[str]) -> Path:
        from scrapy_neardup.config import state_dir_from
        from scrapy_neardup.storage.statedb import STATE_FILE

        if len(args) > 1:
            raise UsageError("give at most one STATE_DIR")
        if args:
            directory = Path(args[0])
            if (directory / "neardup").is_dir() and not (directory / STATE_FILE).exists():
                directory = directory / "neardup"  # a JOBDIR was given
            return directory
        assert self.settings is not None
        found = state_dir_from(self.settings)
        if found is None:
            raise UsageError("no state: give STATE_DIR, or -s JOBDIR=... as for the crawl")
        return found

    def _redis_crawl(self, args: list[str], opts: argparse.Namespace) -> tuple[str, str]:
        """(URL, key prefix) of a crawl shared through Redis."""
        assert self.settings is not None
        if args:
            raise UsageError("give a STATE_DIR or --redis-url, not both")
        url = opts.redis_url or self.settings.get("NEARDUP_REDIS_URL")
        if not url:
            raise UsageError("--reset needs --redis-url URL (or NEARDUP_REDIS_URL)")
        prefix = opts.key_prefix or self.settings.get("NEARDUP_KEY_PREFIX")
        if not prefix:
            raise UsageError(
                "give --key-prefix: the crawl's NEARDUP_KEY_PREFIX, or its spider's name"
            )
        return url, prefix
