"""SpotSigs in more languages: stopword lists per language and the language guess.

The paragraphs are the Universal Declaration of Human Rights, articles 1, 3 and 4, in each
language (public domain), followed by a few sentences of news-like prose written here.
"""

from __future__ import annotations

import importlib.metadata

import pytest

from scrapy_neardup.backends import SpotSigsBackend
from scrapy_neardup.stopwords import (
    CHINESE_ANTECEDENTS,
    CHINESE_STOPWORDS,
    ENGLISH_ANTECEDENTS,
    ENGLISH_STOPWORDS,
    LANGUAGES,
    WORDFREQ_VERSION,
    guess_language,
)
from scrapy_neardup.text import Document, normalize, tokenize

PARAGRAPHS = {
    "de": "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft "
    "und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen. Jeder hat das "
    "Recht auf Leben, Freiheit und Sicherheit der Person. Niemand darf in Sklaverei oder "
    "Leibeigenschaft gehalten werden; Sklaverei und Sklavenhandel sind in allen ihren Formen "
    "verboten. Die Stadt hat im vergangenen Jahr eine neue Bibliothek eröffnet, die seitdem von "
    "vielen Familien besucht wird. Auf den Regalen stehen Bücher aus aller Welt, und an jedem "
    "Wochenende lesen Autorinnen und Autoren aus ihren neuen Werken vor.",
    "fr": "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués "
    "de raison et de conscience et doivent agir les uns envers les autres dans un esprit de "
    "fraternité. Tout individu a droit à la vie, à la liberté et à la sûreté de sa personne. Nul "
    "ne sera tenu en esclavage ni en servitude ; l'esclavage et la traite des esclaves sont "
    "interdits sous toutes leurs formes. La ville a ouvert l'année dernière une nouvelle "
    "bibliothèque, qui accueille depuis des familles de tout le quartier. Sur les étagères se "
    "trouvent des livres du monde entier, et chaque samedi des auteurs viennent y lire des "
    "extraits de leurs romans.",
    "es": "Todos los seres humanos nacen libres e iguales en dignidad y derechos y, dotados como "
    "están de razón y conciencia, deben comportarse fraternalmente los unos con los otros. Todo "
    "individuo tiene derecho a la vida, a la libertad y a la seguridad de su persona. Nadie "
    "estará sometido a esclavitud ni a servidumbre; la esclavitud y la trata de esclavos están "
    "prohibidas en todas sus formas. El año pasado la ciudad abrió una nueva biblioteca en el "
    "centro del barrio, y desde entonces la visitan muchas familias. En sus estantes hay libros "
    "de todo el mundo, y cada sábado los autores leen fragmentos de sus novelas.",
    "nl": "Alle mensen worden vrij en gelijk in waardigheid en rechten geboren. Zij zijn begiftigd "
    "met verstand en geweten, en behoren zich jegens elkander in een geest van broederschap te "
    "gedragen. Een ieder heeft recht op leven, vrijheid en onschendbaarheid van zijn persoon. "
    "Niemand zal in slavernij of horigheid gehouden worden; slavernij en slavenhandel in welke "
    "vorm ook zijn verboden. De stad heeft vorig jaar een nieuwe bibliotheek geopend, die "
    "sindsdien door veel gezinnen uit de buurt wordt bezocht. Op de planken staan boeken uit de "
    "hele wereld, en elke zaterdag lezen schrijvers voor uit hun nieuwe romans.",
    "ru": "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены "
    "разумом и совестью и должны поступать в отношении друг друга в духе братства. Каждый "
    "человек имеет право на жизнь, на свободу и на личную неприкосновенность. Никто не должен "
    "содержаться в рабстве или в подневольном состоянии; рабство и работорговля запрещаются во "
    "всех их видах. В прошлом году в городе открыли новую библиотеку, и с тех пор её посещают "
    "многие семьи из района. На полках стоят книги со всего мира, а по субботам писатели "
    "читают отрывки из своих новых романов.",
}
GERMAN_TRAINS = (
    "Der Zug nach Hamburg fährt heute wegen einer Baustelle später ab. Reisende sollen sich auf "
    "Verspätungen von bis zu einer Stunde einstellen, teilte die Bahn am Morgen mit. Auch die "
    "Verbindungen nach Bremen und Hannover sind betroffen, weil Gleise zwischen den beiden "
    "Städten erneuert werden. Die Arbeiten dauern nach Angaben des Unternehmens noch bis zum "
    "Ende des Monats. Wer ein Ticket für einen ausgefallenen Zug hat, kann es kostenlos "
    "umtauschen oder sich den Preis erstatten lassen."
)
ENGLISH_NOTE = (  # shorter than the German text it is appended to, as such notes are
    "This article is also available in English. The translation was provided by the editors "
    "and has not been reviewed by the author. All rights to the text are reserved by the "
    "publisher, and the images are used with the permission of their owners."
)
# The lists before per-language stopwords: English and Chinese for every document.
OLD = SpotSigsBackend(
    antecedents=ENGLISH_ANTECEDENTS | CHINESE_ANTECEDENTS,
    stopwords=ENGLISH_STOPWORDS | CHINESE_STOPWORDS,
)


def signature(method: SpotSigsBackend, text: str):
    return method.signature(Document(text))


@pytest.mark.parametrize("lang", sorted(PARAGRAPHS))
def test_each_language_is_guessed_and_has_enough_spots(lang: str) -> None:
    method = SpotSigsBackend()
    tokens = Document(PARAGRAPHS[lang]).tokens
    assert guess_language(tokens) == lang
    assert len(method.signature(Document(PARAGRAPHS[lang]))) >= method.min_spots
    assert len(OLD.signature(Document(PARAGRAPHS[lang]))) < method.min_spots  # before: none


def test_spots_come_from_the_documents_language_only() -> None:
    method = SpotSigsBackend()
    spots = method.spots(Document(PARAGRAPHS["de"] + " " + ENGLISH_NOTE).tokens)
    assert ("die", "stadt", "vergangenen") in spots
    # English antecedents of the quoted note start no spot; "in" is a German one too
    assert not [s for s in spots if s[0] in ("the", "this", "was", "by")]


def test_german_articles_sharing_an_english_paragraph_do_not_match() -> None:
    method = SpotSigsBackend()
    a = signature(method, PARAGRAPHS["de"] + " " + ENGLISH_NOTE)
    b = signature(method, GERMAN_TRAINS + " " + ENGLISH_NOTE)
    assert min(len(a), len(b)) >= method.min_spots
    assert method.similarity(a, b) is None
    # with English antecedents for every page, the shared note made them near-duplicates
    old_a = signature(OLD, PARAGRAPHS["de"] + " " + ENGLISH_NOTE)
    old_b = signature(OLD, GERMAN_TRAINS + " " + ENGLISH_NOTE)
    assert OLD.similarity(old_a, old_b) is not None


def test_a_german_copy_with_other_punctuation_matches() -> None:
    method = SpotSigsBackend()
    text = PARAGRAPHS["de"] + " " + GERMAN_TRAINS
    copy = text.replace(",", " -").replace(";", ".").replace(".", "!").upper()
    assert method.similarity(signature(method, text), signature(method, copy)) == 1.0
    edited = text.replace("Bibliothek", "Buecherei").replace("Hamburg", "Kiel")
    similarity = method.similarity(signature(method, text), signature(method, edited))
    assert similarity is not None and similarity >= 0.8


def test_a_translation_shares_no_spots() -> None:
    method = SpotSigsBackend()
    german, dutch = signature(method, PARAGRAPHS["de"]), signature(method, PARAGRAPHS["nl"])
    assert len(set(german.tolist()) & set(dutch.tolist())) == 0


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Der Hund und die Katze sind im Garten.", "de"),
        ("Le chat est sur la table et le chien dort.", "fr"),
        ("El perro y el gato están en la casa de la abuela.", "es"),
        ("De hond en de kat zijn in de tuin van het huis.", "nl"),
        ("Il gatto e il cane sono nella casa della nonna.", "it"),
        ("O gato e o cão estão na casa da avó.", "pt"),
        ("Собака и кошка живут в доме, а не на улице.", "ru"),
        ("The dog and the cat are in the garden.", "en"),
        ("我们的工作是在北京完成的。", "zh"),
        # mixed: the language most of the tokens are written in
        ("Die Katze ist im Garten, sagt der Nachbar: the cat is out.", "de"),
        (
            "The committee met in Berlin; der Vorsitzende was not there, and the vote was held.",
            "en",
        ),
        ("北京是中国的首都，也是一个大城市 Beijing is big", "zh"),
        # no language: links, numbers, Korean
        ("Home News Sports Weather Login 2024", None),
        ("엘제이의 리벤지인가, 류화영의 코스프레인가", None),
        ("", None),
    ],
)
def test_language_guess_on_short_texts(text: str, lang: str | None) -> None:
    assert guess_language(Document(text).tokens) == lang


def test_guess_only_among_the_chosen_languages() -> None:
    tokens = Document(PARAGRAPHS["nl"]).tokens
    assert guess_language(tokens, ("en", "de")) in ("de", None)
    method = SpotSigsBackend(languages=("en", "zh"))
    assert method.spots(tokens) == []  # no spots of a language: Dutch is not among them
    assert (
        len(
            SpotSigsBackend(languages=("en", "zh"), anchors=0).signature(Document(PARAGRAPHS["nl"]))
        )
        < method.min_spots
    )
    # It is signed as a page in no known language: anchored spots.
    anchored = signature(method, PARAGRAPHS["nl"])
    assert len(anchored) >= method.min_spots
    assert not set(anchored.tolist()) & set(signature(SpotSigsBackend(), PARAGRAPHS["nl"]).tolist())


# Korean and Japanese news-like prose written here; no stopword list covers either.
KOREAN = (
    "서울시는 올해 새로운 도서관을 열었고 많은 가족들이 주말마다 그곳을 찾고 있다. 도서관에는 "
    "세계 여러 나라의 책이 있으며 작가들이 매주 토요일 새 작품을 낭독한다. 시 관계자는 내년에 "
    "두 곳을 더 열 계획이라고 밝혔다. 주민들은 아이들이 책을 읽는 시간이 늘었다고 말했다. "
    "지역 상인들도 방문객이 늘어 매출이 올랐다며 반겼다."
)
JAPANESE = (
    "市は昨年新しい図書館を開館し、週末には多くの家族が訪れている。棚には世界中の本が並び、毎週"
    "土曜日には作家が新作を朗読する。市の担当者は来年さらに二つの図書館を開く計画だと述べた。住民"
    "は子どもたちが本を読む時間が増えたと話している。地元の商店も来館者が増えて売り上げが伸びたと"
    "喜んでいる。"
)


@pytest.mark.parametrize("text", [KOREAN, JAPANESE], ids=["ko", "ja"])
def test_a_page_in_no_known_language_is_matched_on_anchored_spots(text: str) -> None:
    """Korean and Japanese have no list: their spots are anchored on the text's own tokens,
    so a copy (the page cut short) is found, verified by containment; without anchors the
    page has no spots of its own (only the excerpt keys propose it)."""
    from scrapy_neardup.deduplicator import Deduplicator

    assert guess_language(Document(text).tokens) is None
    page = text + " " + text[::-1]  # long enough for ten spots
    copy = page[: len(page) * 9 // 10]  # the page cut short: all of it is in the page
    assert len(signature(SpotSigsBackend(anchors=4), page)) >= 10
    assert len(signature(SpotSigsBackend(anchors=0), page)) < len(
        signature(SpotSigsBackend(anchors=4), page)
    )
    dedup = Deduplicator(SpotSigsBackend(anchors=4), min_tokens=20)
    assert not dedup.check("https://a.example/1", page).is_duplicate
    verdict = dedup.check("https://b.example/1", copy)
    assert verdict.duplicate_of == "https://a.example/1" and verdict.method == "spotsigs"
    assert not dedup.check("https://a.example/2", PARAGRAPHS["de"]).is_duplicate


def test_english_and_chinese_signatures_are_unchanged() -> None:
    """An English or a Chinese page is signed as with the lists of both languages, as before."""
    method = SpotSigsBackend()
    english = "The quick brown fox jumps over the lazy dog, and it was said that the cat sat."
    chinese = "我们的工作是在北京完成的。他们表示这个项目已经完成，并且将在明年继续进行。"
    for text in (english * 5, chinese * 5):
        assert signature(method, text).tolist() == signature(OLD, text).tolist()


def test_params_name_the_lists() -> None:
    assert SpotSigsBackend().params() != SpotSigsBackend(languages=("en", "zh")).params()
    assert SpotSigsBackend().params() != OLD.params()
    assert sorted(SpotSigsBackend().params()["languages"]) == sorted(LANGUAGES)
    with pytest.raises(ValueError, match="xx"):
        SpotSigsBackend(languages=("en", "xx"))
    with pytest.raises(ValueError):
        SpotSigsBackend(languages=())


ANTECEDENT_COVERAGE = 0.316
STOPWORD_COVERAGE = 0.438
MAX_ANTECEDENTS = 40
MAX_STOPWORDS = 150


def derive(lang: str) -> tuple[list[str], list[str]]:
    """(antecedents, further stopwords) of ``lang`` from wordfreq, most frequent first: the
    rule that made the lists of :mod:`scrapy_neardup.stopwords` (``docs/design.md#spotsigs``):
    the words that cover the share of running text the English lists cover."""
    import wordfreq

    words: list[str] = []
    for word in wordfreq.top_n_list(lang, 1000):
        norm = normalize(word)
        if word.isalpha() and tokenize(norm) == [norm] and norm not in words:
            words.append(norm)
    covered, n_ante = 0.0, 0
    for n, word in enumerate(words, 1):
        covered += wordfreq.word_frequency(word, lang)
        if not n_ante and (covered >= ANTECEDENT_COVERAGE or n == MAX_ANTECEDENTS):
            n_ante = n
        if n_ante and (covered >= STOPWORD_COVERAGE or n == MAX_STOPWORDS):
            return words[:n_ante], words[n_ante:n]
    raise ValueError(f"wordfreq's list of {lang!r} is too short")


@pytest.mark.skipif(
    importlib.metadata.version("wordfreq") != WORDFREQ_VERSION,
    reason=f"the lists were derived with wordfreq {WORDFREQ_VERSION}",
)
def test_lists_are_what_wordfreq_gives() -> None:
    for lang, words in LANGUAGES.items():
        if lang in ("en", "zh"):
            continue
        antecedents, rest = derive(lang)
        assert frozenset(antecedents) == words.antecedents, lang
        assert frozenset(antecedents + rest) == words.stopwords, lang
