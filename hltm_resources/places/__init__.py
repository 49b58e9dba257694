"""Places by name, for values the documents state as locations: the city a name is written
for in another language ("Roma" is Rome, "København" is Copenhagen, "Gothenburg" is
Göteborg) and the country a city or a country's name is in ("Barcelona" and "España" are
in Spain). From GeoNames (``cities.tsv.gz``, built by :mod:`hltm_resources.places.build`);
read once, on first use, from the package: nothing is fetched.

Only names a document or a question already states as a place are looked up here: a word
is never taken for a place because some town bears its name.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hltm_resources.text import fold

TABLE = Path(__file__).with_name("cities.tsv.gz")

#: A city of one name is taken for the most populous of that name only when it is this many
#: times as populous as the next one in another country: "London" is London, England
#: (8.9 million; London, Ontario: 0.35 million), "Barcelona" is in Spain (1.7 million;
#: Barcelona, Venezuela: 0.8 million), "Valencia" names no one country.
DOMINANT = 2

#: Countries as they write themselves, and other common names, beside GeoNames' English
#: names ("Sverige", "España", "Holland", "UK").
COUNTRY_NAMES: dict[str, tuple[str, ...]] = {
    "AT": ("Österreich",),
    "BE": ("België", "Belgique", "Belgien"),
    "CH": ("Schweiz", "Suisse", "Svizzera", "Svizra"),
    "CZ": ("Česko", "Czechia", "Česká republika"),
    "DE": ("Deutschland",),
    "DK": ("Danmark",),
    "EE": ("Eesti",),
    "ES": ("España",),
    "FI": ("Suomi",),
    "FR": (),
    "GB": ("UK", "U.K.", "Britain", "Great Britain", "England", "Scotland", "Wales",
           "Northern Ireland"),
    "GR": ("Hellas", "Ellada"),
    "HR": ("Hrvatska",),
    "HU": ("Magyarország",),
    "IE": ("Éire", "Eire"),
    "IS": ("Ísland",),
    "IT": ("Italia",),
    "LT": ("Lietuva",),
    "LU": ("Lëtzebuerg", "Luxemburg"),
    "LV": ("Latvija",),
    "NL": ("Nederland", "Holland", "The Netherlands"),
    "NO": ("Norge", "Noreg"),
    "PL": ("Polska",),
    "PT": (),
    "RO": ("România",),
    "SE": ("Sverige",),
    "SI": ("Slovenija",),
    "SK": ("Slovensko",),
    "TR": ("Türkiye", "Turkiye"),
    "US": ("USA", "U.S.", "U.S.A.", "US", "America", "United States of America"),
}  # fmt: skip


@dataclass(frozen=True)
class City:
    name: str
    country: str
    population: int


@dataclass(frozen=True)
class _Places:
    by_name: dict[str, list[City]]  # folded name -> cities, most populous first
    by_other_name: dict[str, list[City]]
    countries: dict[str, str]  # folded country name -> ISO code
    names: dict[str, str]  # ISO code -> English name


@lru_cache(maxsize=1)
def _places() -> _Places:
    by_name: dict[str, list[City]] = {}
    by_other: dict[str, list[City]] = {}
    countries: dict[str, str] = {}
    names: dict[str, str] = {}
    with gzip.open(TABLE, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if line.startswith("="):
                countries[fold(fields[1])] = fields[0][1:]
                names[fields[0][1:]] = fields[1]
                continue
            city = City(fields[0], fields[1], int(fields[2]))
            by_name.setdefault(fold(city.name), []).append(city)
            for other in filter(None, fields[3].split("|")):
                by_other.setdefault(fold(other), []).append(city)
    for code, spellings in COUNTRY_NAMES.items():
        countries.update((fold(n), code) for n in spellings)
    return _Places(by_name, by_other, countries, names)


def _cities(name: str) -> list[City]:
    """The cities ``name`` is written for: by their own name, else by another of theirs."""
    places = _places()
    key = fold(name)
    return places.by_name.get(key) or places.by_other_name.get(key) or []


def city_name(name: str) -> str | None:
    """The name of the most populous city ``name`` is written for ("Rome" for "Roma", for
    "Rom" and for "Rome"), or None when it is no city's name."""
    cities = _cities(name)
    return cities[0].name if cities else None


def country_of_city(name: str) -> str | None:
    """The ISO code of the country of the city ``name`` is written for, or None when no
    city bears it or several cities of comparable size in other countries do."""
    cities = _cities(name)
    if not cities:
        return None
    first = cities[0]
    rival = next((c for c in cities[1:] if c.country != first.country), None)
    if rival is not None and first.population < DOMINANT * rival.population:
        return None
    return first.country


def country_code(name: str) -> str | None:
    """The ISO code of the country ``name`` names ("Spain", "España", "UK"), or None."""
    return _places().countries.get(fold(name))


def country_name(code: str) -> str | None:
    """The English name of the country of ISO code ``code`` ("SE": "Sweden"), or None."""
    return _places().names.get(code.upper())
