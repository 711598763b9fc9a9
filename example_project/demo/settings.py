"""Settings of the example project: scrapy-neardup is enabled by the ADDONS line alone."""

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

ADDONS = {"scrapy_neardup.Addon": 500}

# Optional: keep the plugin's state where `scrapy neardup-stats` finds it without JOBDIR.
NEARDUP_STATE_DIR = ".neardup-state"
# Optional: keep what each page was compared by, for `scrapy neardup-stats --html drops.html`.
NEARDUP_KEEP_TEXT = 20000

ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 16
LOG_LEVEL = "INFO"
FEEDS = {"items.jsonl": {"format": "jsonlines", "overwrite": True}}
