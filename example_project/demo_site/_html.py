"""HTML templates of the five fictional sites that share the demo server.

* the Riverside Chronicle (main site, heavy boilerplate identical on every page),
* the Valley Ledger (a partner site that republishes articles in its own template),
* the Continental News Wire (syndicated copies), a print view and an AMP view,
* the Chinese edition of the Chronicle and 东方资讯网 (a portal that reprints it).

All links are path-absolute, so pages do not depend on the host and port they are served on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

SITE = "The Riverside Chronicle"
PARTNER = "The Valley Ledger"
WIRE = "Continental News Wire"
ZH_SITE = "河畔纪事中文版"
PORTAL = "东方资讯网"

MONTH_NAMES = tuple(
    "January February March April May June July August September October November December".split()
)

Link = tuple[str, str]


def human_date(iso: str) -> str:
    """``2024-03-07`` -> ``7 March 2024``."""
    year, month, day = iso.split("-")
    return f"{int(day)} {MONTH_NAMES[int(month) - 1]} {year}"


def zh_date(iso: str) -> str:
    """``2024-03-07`` -> ``2024年3月7日``."""
    year, month, day = iso.split("-")
    return f"{year}年{int(month)}月{int(day)}日"


def _paras(paragraphs: Iterable[str]) -> str:
    return "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)


def _links(links: Iterable[Link], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    items = "\n".join(f'<li><a href="{escape(h)}">{escape(t)}</a></li>' for h, t in links)
    return f"<ul{attr}>\n{items}\n</ul>"


def _head(title: str, og_type: str, lang: str, canonical: str | None, extra: str = "") -> str:
    canon = f'<link rel="canonical" href="{escape(canonical)}">\n' if canonical else ""
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n"
        f'<meta property="og:type" content="{og_type}">\n'
        f'<meta property="og:title" content="{escape(title)}">\n'
        f"{canon}{extra}</head>\n"
    )


# ---------------------------------------------------------------- the Riverside Chronicle

SECTIONS: tuple[Link, ...] = (
    ("/section/energy", "Energy"),
    ("/section/transport", "Transport"),
    ("/section/health", "Health"),
    ("/section/farming", "Farming"),
    ("/section/science", "Science"),
    ("/section/business", "Business"),
    ("/section/education", "Education"),
    ("/section/environment", "Environment"),
    ("/section/technology", "Technology"),
    ("/section/culture", "Culture and Sport"),
)

MAIN_NAV: tuple[Link, ...] = (
    ("/", "Home"),
    *SECTIONS,
    ("/zh", "中文版"),
    ("/notices", "Notices"),
    ("/archive", "Archive"),
    ("/most-read", "Most read"),
)

COOKIE_NOTICE = (
    "We use cookies and similar technologies to keep this site working, to remember your "
    "preferences, to measure how our journalism is read and to show advertising that helps pay "
    "for local reporting. Some cookies are strictly necessary and cannot be switched off. Others "
    "are only set if you agree. You can change your mind at any time by visiting the privacy "
    "settings link at the bottom of every page. For more detail about the partners we work with "
    "and how long information is kept, read our cookie policy and privacy notice."
)

RELATED: tuple[tuple[str, str, str], ...] = (
    (
        "/section/transport",
        "Ferry timetable returns to summer schedule",
        "Crossings to the island resume every forty minutes from the first weekend of May, "
        "with extra sailings on market days and bank holidays.",
    ),
    (
        "/section/education",
        "Library extends its Saturday opening hours",
        "Volunteers from the friends' group will keep the reading room open until five, "
        "and the children's storytime moves to eleven o'clock.",
    ),
    (
        "/section/business",
        "Letters: readers weigh in on the bypass debate",
        "A retired surveyor, a cycling commuter and the owner of a garden centre write about "
        "noise, traffic and the price of doing nothing.",
    ),
    (
        "/section/culture",
        "Photo gallery: the frost fair on the quay",
        "Skaters, chestnut sellers and a brass band braved the coldest night of the year for "
        "the first frost fair held in the harbour for a generation.",
    ),
    (
        "/section/culture",
        "Obituary: the last lamplighter of Canal Street",
        "For thirty years he walked the towpath at dusk with a ladder and a pole, and he knew "
        "every family behind every lit window.",
    ),
    (
        "/section/environment",
        "Weather: a wet week before the weekend clears",
        "Forecasters expect persistent drizzle and low cloud until Friday, with brighter and "
        "drier conditions spreading from the west by Saturday morning.",
    ),
    (
        "/section/health",
        "Quiz night raises funds for the lifeboat crew",
        "Forty teams squeezed into the sailing club for a quiz that raised enough money to "
        "replace the crew's worn-out drysuits and helmets.",
    ),
    (
        "/section/farming",
        "Our guide to walks along the old drovers' road",
        "Five circular routes follow the green lane that once carried cattle to market, with "
        "notes on stiles, parking and where to find a good lunch.",
    ),
)

NEWSLETTER = (
    "Sign up for the Morning Chronicle, our free daily email with the stories that matter in "
    "the valley, delivered before seven o'clock. We never sell your address, and you can "
    "unsubscribe with a single click from any edition."
)

FOOTER = (
    "The Riverside Chronicle is an independent local newspaper serving the towns and villages "
    "of the river valley since 1887. Our newsroom is based at 14 Quay Street. We are a member of "
    "the regional press standards body and follow its editors' code of practice. If you believe "
    "we have got something wrong, please contact our readers' editor. Copyright The Riverside "
    "Chronicle. All rights reserved. Reproduction of any material without permission is "
    "prohibited. Registered as a community benefit society and printed and published by the "
    "Riverside Media Cooperative."
)

FOOTER_LINKS: tuple[Link, ...] = (
    ("/", "Home"),
    ("/notices", "Notices"),
    ("/archive", "Archive"),
    ("/newsletter/2025-03", "Newsletter"),
    ("/social", "Shared on social media"),
    ("/mobile", "Mobile edition"),
)

TICKER = (
    "Roadworks continue on the ring road until the end of the month. Fog warning for Thursday "
    "morning. The council meeting is streamed live on Wednesday evening."
)


def main_chrome(title: str, og_type: str, canonical: str | None, main: str, extra: str = "") -> str:
    """Wrap ``main`` in the Chronicle's header, cookie banner, nav, sidebar and footer."""
    related = "\n".join(
        f'<li><a href="{h}">{escape(t)}</a><p>{escape(teaser)}</p></li>' for h, t, teaser in RELATED
    )
    return (
        _head(f"{title} | {SITE}", og_type, "en", canonical, extra) + '<body class="chronicle">\n'
        f'<div id="cookie-consent" class="cookie-banner" role="dialog"><p>{COOKIE_NOTICE}</p>'
        "<button>Accept all</button><button>Manage preferences</button></div>\n"
        f'<header class="masthead"><a class="logo" href="/">{SITE}</a>'
        '<p class="tagline">News from the river valley since 1887</p>\n'
        f'<nav class="primary-nav" aria-label="Sections">\n{_links(MAIN_NAV)}\n</nav>\n'
        f'<aside class="ticker" aria-label="Travel and weather">{escape(TICKER)}</aside>\n'
        "</header>\n"
        f'<main id="content">\n{main}\n</main>\n'
        '<aside class="sidebar">\n<section class="related"><h2>Related stories</h2>\n'
        f"<ul>\n{related}\n</ul></section>\n"
        f'<section class="newsletter-signup"><h2>Newsletter</h2><p>{NEWSLETTER}</p></section>\n'
        "</aside>\n"
        f'<footer class="site-footer"><p>{FOOTER}</p>\n{_links(FOOTER_LINKS)}\n</footer>\n'
        "</body>\n</html>\n"
    )


def main_article(
    *,
    title: str,
    author: str,
    date: str,
    section: Link,
    paragraphs: Sequence[str],
    canonical: str,
    print_href: str | None = None,
    amp_href: str | None = None,
    media_href: str | None = None,
) -> str:
    """An article page of the Chronicle."""
    tools = []
    if print_href:
        tools.append(f'<a href="{escape(print_href)}">Print this story</a>')
    if media_href:
        tools.append(f'<a href="{escape(media_href)}">Download the chart (PNG)</a>')
    tool_html = f'<div class="story-tools">{" | ".join(tools)}</div>\n' if tools else ""
    main = (
        '<article class="story">\n'
        f'<p class="kicker"><a href="{section[0]}">{escape(section[1])}</a></p>\n'
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="byline">By <span class="author">{escape(author)}</span>, '
        f'<time datetime="{date}">{human_date(date)}</time></p>\n'
        f'<div class="story-body">\n{_paras(paragraphs)}\n</div>\n</article>\n'
        f"{tool_html}"
        # where the story's comments would be (linked as #comments): none yet, so no text
        # that its print view lacks
        '<section id="comments" class="comments"></section>'
    )
    amp = f'<link rel="amphtml" href="{escape(amp_href)}">\n' if amp_href else ""
    return main_chrome(title, "article", canonical, main, amp)


def main_notice(*, title: str, date: str, text: str, canonical: str) -> str:
    """A short notice page of the Chronicle (same chrome, a few words of content)."""
    main = (
        '<article class="notice">\n'
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="byline"><time datetime="{date}">{human_date(date)}</time></p>\n'
        f'<div class="story-body">\n<p>{escape(text)}</p>\n</div>\n</article>'
    )
    return main_chrome(title, "article", canonical, main)


def main_index(title: str, path: str, groups: Sequence[tuple[str, Sequence[Link]]]) -> str:
    """A navigation page of the Chronicle: headed lists of links."""
    body = "\n".join(
        f'<section class="list"><h2>{escape(h)}</h2>\n{_links(links, "story-list")}</section>'
        for h, links in groups
    )
    main = f'<div class="index">\n<h1>{escape(title)}</h1>\n{body}\n</div>'
    return main_chrome(title, "website", path, main)


def print_view(
    *, title: str, author: str, date: str, paragraphs: Sequence[str], source: str
) -> str:
    """The print view: no navigation, the title, byline and text, and a one-line footer."""
    return (
        _head(title, "article", "en", None, '<meta name="robots" content="noindex">\n')
        + '<body class="print">\n'
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="byline">By {escape(author)}, {human_date(date)}</p>\n'
        f"{_paras(paragraphs)}\n"
        f"<footer><p>Printed from {SITE}, {escape(source)}</p></footer>\n"
        "</body>\n</html>\n"
    )


def amp_view(
    *, title: str, author: str, date: str, paragraphs: Sequence[str], canonical: str
) -> str:
    """The AMP view: its own light header, same text, ``rel=canonical`` to the article."""
    return (
        _head(title, "article", "en", canonical, '<meta name="amp-page" content="1">\n').replace(
            "<html ", "<html amp ", 1
        )
        + '<body class="amp">\n'
        f'<header class="amp-bar"><a href="/">{SITE}</a></header>\n'
        f'<article>\n<h1>{escape(title)}</h1>\n<p class="amp-byline">{escape(author)} '
        f"| {human_date(date)}</p>\n{_paras(paragraphs)}\n</article>\n"
        f'<footer class="amp-foot"><a href="{escape(canonical)}">View the full site</a></footer>\n'
        "</body>\n</html>\n"
    )


# ---------------------------------------------------------------- the Valley Ledger (partner)

PARTNER_MOST_READ = (
    "Hill farm wins award for drystone walling",
    "Where to find the best fish and chips on the coast",
    "Council tax bills explained in five charts",
    "Bypass inquiry hears from hauliers",
    "Reservoir levels recover after a wet autumn",
    "Brass band marks a century with anniversary concert",
)
PARTNER_FOOTER = (
    "The Valley Ledger publishes stories from partner newsrooms across the region under a "
    "content sharing agreement."
)


def partner_page(title: str, path: str, body_html: str, og_type: str = "article") -> str:
    """Any page of the partner site: a div-based layout unlike the Chronicle's."""
    most_read = "".join(f"<li>{escape(t)}</li>" for t in PARTNER_MOST_READ)
    return (
        _head(f"{title} - {PARTNER}", og_type, "en", path)
        + '<body class="vl">\n<div id="vl-top"><div class="vl-brand">'
        f'<a href="/partners">{PARTNER}</a> <span>Partner stories from around the region</span>'
        '</div>\n<div class="vl-menu"><a href="/partners">Ledger home</a> '
        '<a href="/">Our partner: the Riverside Chronicle</a></div></div>\n'
        f'<div class="vl-wrap">\n<div class="vl-left">\n{body_html}\n</div>\n'
        '<aside class="vl-right"><div class="vl-box"><h3>Most read on the Ledger</h3>'
        f"<ol>{most_read}</ol></div>\n"
        '<div class="vl-ad">Advertisement: Spring sale now on at Harrow &amp; Daughters '
        "furniture, the valley's family furniture store since 1962.</div></aside>\n</div>\n"
        f'<footer id="vl-bottom"><p>{PARTNER_FOOTER}</p></footer>\n</body>\n</html>\n'
    )


def partner_article(
    *, title: str, author: str, date: str, paragraphs: Sequence[str], path: str
) -> str:
    """A Chronicle article republished verbatim by the partner site."""
    body = (
        f'<div class="vl-headline"><h2>{escape(title)}</h2></div>\n'
        f'<div class="vl-meta">{escape(author)} for {SITE} | {human_date(date)}</div>\n'
        f'<div class="vl-text">\n{_paras(paragraphs)}\n</div>'
    )
    return partner_page(title, path, body)


# ---------------------------------------------------------------- the Continental News Wire

WIRE_LATEST = (
    "Markets steady ahead of interest rate decision",
    "Storm warning issued for northern coasts",
    "Rail strike talks to resume on Monday",
    "Museum returns carved panels to island community",
    "Record entries for national brass band finals",
)
WIRE_FOOTER = (
    "Continental News Wire distributes news from member publications to subscribers. "
    "Redistribution is permitted only under licence. Corrections are issued on the wire as "
    "soon as they are confirmed."
)


def wire_page(title: str, path: str, body_html: str, og_type: str = "article") -> str:
    """Any page of the news wire."""
    latest = "".join(f"<li>{escape(t)}</li>" for t in WIRE_LATEST)
    return (
        _head(f"{title} :: {WIRE}", og_type, "en", path)
        + '<body class="wire">\n<table class="wire-top"><tr><td>'
        f'<a href="/wire">{WIRE}</a></td><td>Subscriber feed</td></tr></table>\n'
        f'<section id="story">\n{body_html}\n</section>\n'
        f'<section class="wire-latest"><h4>Latest on the wire</h4><ul>{latest}</ul></section>\n'
        f'<p class="wire-legal">{WIRE_FOOTER}</p>\n</body>\n</html>\n'
    )


def wire_article(*, title: str, date: str, paragraphs: Sequence[str], path: str) -> str:
    """A syndicated copy on the news wire."""
    body = (
        f"<h1>{escape(title)}</h1>\n<p><em>Filed {human_date(date)}</em></p>\n"
        f'<div class="wire-copy">\n{_paras(paragraphs)}\n</div>'
    )
    return wire_page(title, path, body)


# ---------------------------------------------------------------- the Chinese edition

ZH_NAV: tuple[Link, ...] = (("/zh", "首页"), ("/", "English edition"), ("/zh/portal", "合作媒体"))
ZH_COOKIE = (
    "本网站使用Cookie来改善您的浏览体验、分析网站流量并提供个性化内容。"
    "继续浏览即表示您同意我们按照隐私政策使用Cookie，您可以随时在浏览器设置中更改偏好。"
)
ZH_RELATED = (
    ("河畔渡口恢复夏季班次", "每天首班船提前至早上六点半，周末加开观光航线。"),
    ("图书馆周六延长开放时间", "阅览室开放至下午五点，儿童故事会改在上午十一点。"),
    ("读者来信：关于绕城公路的讨论", "一位退休测量师、一位骑行通勤者和一位花店老板谈噪音与交通。"),
    ("组图：码头冬日集市", "溜冰、糖炒栗子和铜管乐队，在一年中最冷的夜晚点亮了港口。"),
    ("天气：本周多雨 周末转晴", "预计周五前持续小雨和低云，周六上午起天气逐渐转好。"),
    ("救生艇募捐问答之夜", "四十支队伍挤进帆船俱乐部，为救生队员筹得新干式防护服的费用。"),
)
ZH_FOOTER = (
    "河畔纪事中文版 版权所有。"
    "未经书面授权，任何单位和个人不得转载、摘编或以其他方式使用本网站内容。"
    "新闻热线：0571-0000-1887。违法和不良信息举报邮箱见网站底部。地址：码头街14号。"
)


def zh_chrome(title: str, og_type: str, canonical: str | None, main: str) -> str:
    """The Chinese edition's template: Chinese nav, cookie notice, 相关阅读 and footer."""
    related = "\n".join(f"<li><strong>{t}</strong><p>{d}</p></li>" for t, d in ZH_RELATED)
    return (
        _head(f"{title} - {ZH_SITE}", og_type, "zh-CN", canonical) + '<body class="zh">\n'
        f'<div class="cookie-banner" id="cookie-consent"><p>{ZH_COOKIE}</p></div>\n'
        f'<header><a class="logo" href="/zh">{ZH_SITE}</a>\n<nav>{_links(ZH_NAV)}</nav></header>\n'
        f'<main id="content">\n{main}\n</main>\n'
        f'<aside class="sidebar"><h2>相关阅读</h2>\n<ul>\n{related}\n</ul></aside>\n'
        f'<footer class="site-footer"><p>{ZH_FOOTER}</p></footer>\n</body>\n</html>\n'
    )


def zh_article(
    *,
    title: str,
    author: str,
    date: str,
    section: str,
    paragraphs: Sequence[str],
    canonical: str,
    print_href: str | None = None,
) -> str:
    """An article page of the Chinese edition."""
    tools = (
        f'<div class="story-tools"><a href="{print_href}">打印本页</a></div>\n'
        if print_href
        else ""
    )
    main = (
        '<article class="story">\n'
        f'<p class="kicker"><a href="/zh">{escape(section)}</a></p>\n<h1>{escape(title)}</h1>\n'
        f'<p class="byline">记者 {escape(author)}　'
        f'<time datetime="{date}">{zh_date(date)}</time></p>\n'
        f'<div class="story-body">\n{_paras(paragraphs)}\n</div>\n</article>\n'
        f"{tools}"
        '<section id="comments" class="comments"></section>'
    )
    return zh_chrome(title, "article", canonical, main)


def zh_index(title: str, path: str, groups: Sequence[tuple[str, Sequence[Link]]]) -> str:
    """A navigation page of the Chinese edition."""
    body = "\n".join(
        f"<section><h2>{escape(h)}</h2>\n{_links(links)}</section>" for h, links in groups
    )
    return zh_chrome(title, "website", path, f"<h1>{escape(title)}</h1>\n{body}")


def zh_print(*, title: str, author: str, date: str, paragraphs: Sequence[str], source: str) -> str:
    """The Chinese print view."""
    return (
        _head(title, "article", "zh-CN", None, '<meta name="robots" content="noindex">\n')
        + f'<body class="print">\n<h1>{escape(title)}</h1>\n<p class="byline">记者 '
        f"{escape(author)} {zh_date(date)}</p>\n{_paras(paragraphs)}\n"
        f"<footer><p>打印自{ZH_SITE} {escape(source)}</p></footer>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------- 东方资讯网 (portal)

PORTAL_NAV = ("新闻", "财经", "科技", "体育", "娱乐", "汽车", "房产", "旅游", "健康", "教育")
PORTAL_HOT = (
    "多地迎来降温天气 注意添衣保暖",
    "新能源汽车下乡活动启动",
    "暑期档电影票房创新高",
    "高铁新线路开通运营",
    "秋季养生小常识",
    "博物馆夜场受年轻人欢迎",
)
PORTAL_FOOTER = (
    "东方资讯网 版权所有 转载内容仅代表原作者观点，不代表本网立场。"
    "如涉及版权问题，请与本网联系。网络文化经营许可证编号：示例000号。"
)


def portal_page(title: str, path: str, body_html: str, og_type: str = "article") -> str:
    """Any page of the portal."""
    nav = " ".join(f"<span>{n}</span>" for n in PORTAL_NAV)
    hot = "".join(f"<li>{t}</li>" for t in PORTAL_HOT)
    return (
        _head(f"{title}_{PORTAL}", og_type, "zh-CN", path) + '<body class="portal">\n'
        f'<div class="p-top"><a href="/zh/portal">{PORTAL}</a> {nav}</div>\n'
        f'<div class="p-main">\n{body_html}\n</div>\n'
        f'<div class="p-side"><h3>热点排行</h3><ol>{hot}</ol></div>\n'
        f'<div class="p-foot">{PORTAL_FOOTER}</div>\n</body>\n</html>\n'
    )


def portal_article(*, title: str, date: str, paragraphs: Sequence[str], path: str) -> str:
    """A reprint (转载) on the portal."""
    body = (
        f'<h1 class="p-title">{escape(title)}</h1>\n'
        f'<div class="p-info">{zh_date(date)}　来源：{ZH_SITE}</div>\n'
        f'<div class="p-content">\n{_paras(paragraphs)}\n</div>'
    )
    return portal_page(title, path, body)


def not_found(path: str) -> str:
    """The body of a 404 response."""
    return (
        _head("Page not found", "website", "en", None)
        + f"<body><h1>Not found</h1><p>No page at {escape(path)}.</p>"
        '<p><a href="/">Home</a></p></body>\n</html>\n'
    )


def moved(target: str) -> str:
    """The body of a 301 response."""
    return (
        "<!DOCTYPE html>\n<html><head><title>Moved</title></head>"
        f'<body><p>This page has moved to <a href="{escape(target)}">{escape(target)}</a>.</p>'
        "</body></html>\n"
    )
