"""Places by name: a city in another language is that city, and is in its country."""

import pytest

from hltm_resources.engines.vocabulary import country_of_place, in_country_of, same_value_key
from hltm_resources.places import city_name, country_code, country_of_city


@pytest.mark.parametrize(
    "written,city",
    [("Roma", "Rome"), ("København", "Copenhagen"), ("Milano", "Milan"), ("Köln", "Köln"),
     ("Cologne", "Köln"), ("Den Haag", "The Hague"), ("Lisboa", "Lisbon")],
)  # fmt: skip
def test_a_city_written_in_another_language_is_that_city(written, city):
    assert city_name(written) == city
    assert same_value_key("location", f"{written}, somewhere") == same_value_key("location", city)


def test_words_that_are_no_city_name_none():
    assert city_name("Remote") is None and city_name("Hybrid") is None
    assert same_value_key("location", "Remote") == "remote"


@pytest.mark.parametrize(
    "name,country",
    [("London", "GB"), ("Barcelona", "ES"), ("Porto", "PT"), ("Valencia", None),
     ("Cambridge", None), ("Nowhere-on-Sea", None)],
)  # fmt: skip
def test_a_city_is_in_the_country_of_its_most_populous_bearer_when_it_dominates(name, country):
    # Valencia (Venezuela 1.4 million, Spain 0.8 million) names no one country.
    assert country_of_city(name) == country


@pytest.mark.parametrize(
    "value,country",
    [("Madrid, España", "ES"), ("Stockholm, SE", "SE"), ("Berlin, DE", "DE"),
     ("Oslo Gardermoen, Norge", "NO"), ("Oslo Gardermoen", "NO"), ("Portland, ME", "US"),
     ("Dover, DE", "US"), ("Roma", "IT")],
)  # fmt: skip
def test_the_country_of_a_place_is_the_one_written_after_it_else_its_citys(value, country):
    # "ME" after Portland is Maine (in the US), not Montenegro; "DE" after Dover is Delaware.
    assert country_of_place(value) == country


def test_a_country_by_any_of_its_names():
    assert {country_code(n) for n in ("Spain", "España")} == {"ES"}
    assert {country_code(n) for n in ("UK", "United Kingdom", "Scotland")} == {"GB"}
    assert in_country_of("Roma, Italia", "italy")
    assert not in_country_of("Roma, Italia", "spain")


@pytest.mark.parametrize(
    "value,city",
    [("Sint-Servaas, Maastricht", "maastricht"), ("Hallward Klinikum Aachen", "aachen"),
     ("Stockholm Arlanda, Sverige", "stockholm"), ("Dublin 2 - Grand Canal Dock", "dublin")],
)  # fmt: skip
def test_a_site_written_with_its_city_is_that_city(value, city):
    assert same_value_key("location", value) == city
