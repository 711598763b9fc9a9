"""Stopwords per language, and a cheap guess of a document's language, for SpotSigs.

Promises: for every supported language, its antecedents (the most frequent stopwords, where a
spot signature starts) and the stopwords a chain skips; :func:`guess_language` picks the
language whose stopwords a text uses most, so two pages in one language are compared by that
language's spots. Data and plain Python only. Rationale: ``docs/design.md#spotsigs``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scrapy_neardup.text import HAN_CHARS

#: The wordfreq release the lists of the other languages were derived from (by the rule of
#: tests/test_spotsigs_languages.py's ``derive``, ``docs/design.md#spotsigs``).
WORDFREQ_VERSION = "3.1.1"
# English prose has ~0.4 of its tokens in its stopword list, other languages' prose about as
# much, a list of links or a table well under 0.1: below this share no language is chosen.
MIN_COVERAGE = 0.1


@dataclass(frozen=True)
class LanguageWords:
    """One language's antecedents and chain stopwords (which include the antecedents)."""

    antecedents: frozenset[str]
    stopwords: frozenset[str]


ENGLISH_ANTECEDENTS = frozenset(
    "a an the is are was were be been being there said says has have had will would "
    "it its this that these those of to in on for with by at from as and or but not".split()
)
CHINESE_ANTECEDENTS = frozenset(
    "的 了 是 在 和 有 也 就 都 而 及 与 着 或 被 对 从 将 把 为 "
    "这 那 一个 我们 他们 表示 说 已 其 并 但".split()
)
# Words skipped when building a chain: the antecedents themselves and other function words.
ENGLISH_STOPWORDS = ENGLISH_ANTECEDENTS | frozenset(
    "i you he she we they me him her us them my your his our their which who whom what when "
    "where why how all any both each few more most other some such no nor only own same so "
    "than too very can just should now do does did doing if then into over under again "
    # Pieces of contractions ("doesn't" tokenises as "doesn", "t"), modals and titles: in
    # chains they made spots such as "it doesn t" that half of all English pages share.
    "s t d ll m re ve don doesn didn isn wasn aren weren won wouldn couldn shouldn hasn haven "
    "hadn could may might must also mr mrs ms".split()
)
CHINESE_STOPWORDS = CHINESE_ANTECEDENTS | frozenset(
    "我 你 他 她 它 之 于 以 上 下 中 个 不 没有 很 还 又 要 会 能 可以 所以 因为 如果 等".split()
)

# Derived with wordfreq 3.1.1: the antecedents, then the other stopwords, by frequency.
_DERIVED = {
    "de": (
        "die der und in das ich ist nicht zu den von mit es ein auf für im sie eine sich auch "
        "dem des als er an dass so bei wie aber aus hat sind",
        "nach noch wir du war nur wenn oder wird was werden einen am man um haben einer zum "
        "kann über da dann einem schon habe ja mehr mir sein vor mal zur durch hier mich bis "
        "doch ihr immer jetzt diese wurde wieder keine alle sehr können muss uns bin unter vom "
        "gut gibt hatte ihre",
    ),
    "fr": (
        "de la le et l à les est en des d un que a pas une du il pour dans",
        "je qui c au ce sur qu par on ne plus avec j n mais se vous s ça tu elle son y ai ou",
    ),
    "es": (
        "de la que el en y a los no un se por es del",
        "las con una para lo su al como me más si pero te o mi le este sus esta todo ya ha "
        "cuando yo ser son sin hay",
    ),
    "it": (
        "di e che il la a in non un per è del l i una le si con della da sono ma al ha come",
        "più dei se nel mi alla anche lo gli delle o questo ho ci su ad dal solo essere io "
        "nella ti cui d era stato quando tutti ed questa c tutto cosa hanno tra fatto prima suo "
        "loro parte perché anni due sia sua ai fare così dalla degli dopo sul alle uno ne poi "
        "quello",
    ),
    "nl": (
        "de van het een en in is op ik dat voor je te met niet zijn die als",
        "er maar om aan hij ook ze door naar uit bij dan dit was we wat heeft of over nog deze "
        "hebben kan meer zo al geen mijn wel tot u",
    ),
    "pt": (
        "de a o que e do em da é para não um uma com no se na por os",
        "eu como as mais dos mas foi ao me você ser seu sua tem são das ou à ele muito isso já "
        "nos também quando está meu pelo ela vai só dia pela sobre bem até mesmo pode pessoas "
        "te ter tudo ainda aqui fazer minha anos todos quem",
    ),
    "sv": (
        "är det att och i jag på en inte som för med har av om du så till den",
        "de ett kan vi men man var ska när nu vad från här mig bara eller han då hur kommer "
        "alla vill sig vara där får bra finns ha skulle",
    ),
    "da": (
        "i og er af det at en til på jeg har for ikke med den der de du kan som",
        "så et var vi om han fra men skal ved vil også være hvor nu man hvis sig efter mig "
        "eller her hvad ud alle godt meget noget da dig kunne",
    ),
    "pl": (
        "w i nie na się to z do jest że o jak a ale co tak za od po dla tym czy przez tego są "
        "ma tylko już mi mnie ze może bo ja ten oraz bardzo będzie być jego",
        "by sobie ich mam jeśli roku też jeszcze był które jako jestem było jej kiedy który "
        "nawet teraz go no pod coś ci lat tam te więc gdy gdzie tej bez żeby jednak lub wiem "
        "nic wszystko można przy ludzie przed więcej chyba ludzi nas także tu on była u tych "
        "również ta takie ktoś niż dobrze kto r zawsze która właśnie masz sie aby albo ty osób "
        "czas mają dzięki którzy podczas bardziej dlaczego dzieci nich raz mu nad nigdy pracy "
        "im mamy życie chce dnia innych je jesteś temu tutaj wiele został będą jeden miejsce "
        "polski wszyscy wszystkich wszystkie były kilka nam sposób we domu dzień których prostu",
    ),
    "ru": (
        "в и на не с что я по а как из это за для о к но то у его он от все так же мы до ты "
        "только был если когда было мне меня уже еще бы или их",
        "они при будет время кто года чтобы есть она во вы может после нет очень были со была "
        "также вот ее чем быть где под этом вас россии да даже можно того просто этого больше "
        "сейчас том более г ну без году лет нас ни об там человек которые себя этот который ли "
        "м раз всех один тебя теперь всего сегодня надо через ему них сша тоже области почему "
        "день пока тем эти жизни им всегда между этой здесь потому нужно себе такой тебе год "
        "два людей него однако п люди много ничего тут свою всё её жизнь нам несколько своей "
        "сказал тогда хочу вам мой ещё место потом против",
    ),
    "id": (
        "yang dan di ini dari untuk dengan itu bisa aku ada tidak akan adalah dalam pada kita "
        "orang ke juga anda dia saya ya kamu lebih apa sudah mereka tapi karena atau menjadi "
        "tak baik jadi harus satu lagi seperti",
        "oleh banyak jika hanya kami saat tahun jangan sebagai hari telah semua dapat hal anak "
        "bahwa bukan indonesia saja sangat masih memiliki pernah mau lain sekarang baru sama "
        "seorang tersebut kalau beberapa besar salah sendiri ingin sebuah ia setelah waktu "
        "sampai tempat membuat punya mungkin hidup melakukan siapa belum kali kau tentang atas "
        "dua dunia secara ketika bahasa cara para rumah selalu lalu benar kota diri bagian "
        "kembali pasti selama pertama bersama nama setiap tanpa terjadi kepada mulai paling "
        "tetap masa tahu lama perlu berada cukup kan kasih kata kemudian luar mana masalah "
        "bulan malam masuk melihat namun wanita memang sedang sekali tetapi hati hingga makan "
        "merupakan nya pun air",
    ),
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


LANGUAGES: dict[str, LanguageWords] = {
    "en": LanguageWords(ENGLISH_ANTECEDENTS, ENGLISH_STOPWORDS),
    "zh": LanguageWords(CHINESE_ANTECEDENTS, CHINESE_STOPWORDS),
    **{
        lang: LanguageWords(_words(ante), _words(ante) | _words(rest))
        for lang, (ante, rest) in _DERIVED.items()
    },
}


# Han characters (not kana, not hangul): jieba's tokens of a Chinese text begin with one.
_HAN = re.compile(f"[{HAN_CHARS}]")
# More than half of the tokens Chinese words: Chinese, by script (its short stopword list
# covers only 5-25 % of a Chinese page's tokens, too little to compare with the others).
HAN_SHARE = 0.5


def guess_language(tokens: Sequence[str], languages: Iterable[str] | None = None) -> str | None:
    """Chinese by script, else the language (of ``languages``, default all) whose stopwords
    cover most tokens, or None below :data:`MIN_COVERAGE`. Ties go to the earlier language
    of :data:`LANGUAGES`, so the guess is deterministic."""
    allowed = LANGUAGES.keys() if languages is None else set(languages)
    if not tokens:
        return None
    if "zh" in allowed:
        han = sum(1 for tok in tokens if not tok.isascii() and _HAN.match(tok))
        if han / len(tokens) > HAN_SHARE:
            return "zh"
    counts = Counter(tokens)
    best, best_share = None, MIN_COVERAGE
    for lang in [lang for lang in LANGUAGES if lang in allowed]:
        words = counts.keys() & LANGUAGES[lang].stopwords
        share = sum(counts[w] for w in words) / len(tokens)
        if share >= best_share and (best is None or share > best_share):
            best, best_share = lang, share
    return best
