"""The shared vocabulary of facets: canonical keys, their aliases and value normalization.

Both engines use it: the extractive engine to read documents, the LLM engine to normalize what
the model returns, so that exports of different applicant tracking systems and both engines
aggregate onto the same facets (``office_location`` and ``workplaceType`` become ``location`` and
``workplace_type``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from hltm_resources.places import city_name, country_code, country_name, country_of_city
from hltm_resources.text import (
    clean_value,
    fold,
    pluralize,
    snake_key,
    title_case,
    without_asides,
)

#: Canonical keys in the order memories present them.
KEY_ORDER: tuple[str, ...] = (
    "title",
    "seniority",
    "location",
    "workplace_type",
    "skill",
    "preferred_skill",
    "rejection_reason",
    "department",
    "employment_type",
    "experience_years",
    "salary_range",
    "currency",
    "visa_sponsorship",
    "education",
    "language",
    "industry",
    "hiring_manager",
    "headcount",
)

#: Verbs by which a note says a fact of the role changed ("moves from Boston to San Diego",
#: "cut the intake from 6 to 4", "the start is pushed back"): extraction reads "<verb> ...
#: from X to Y" as a change, and a "why" question finds a note saying it with another of them.
CHANGE_VERBS = (
    "move relocate transfer shift change switch go went cut reduce raise increase drop lower "
    "bump push delay postpone slip revise"
).split()

#: Keys that hold several values at once (a project requires several skills).
MULTI_KEYS = frozenset(
    {"skill", "preferred_skill", "rejection_reason", "language", "benefit", "certification"}
)

ALIASES: dict[str, tuple[str, ...]] = {
    "title": (
        "title job_title jobtitle position position_title role role_title job job_name "
        "posting_title posting_text opening opening_title requisition_title job_role req_title "
        "vacancy posting"
    ).split(),
    "seniority": (
        "seniority seniority_level level career_level experience_level job_level grade band"
    ).split(),
    "location": (
        "location job_location work_location office office_location city primary_location "
        "locations based_in site work_site hiring_location geo depot where city_country "
        "city_state country_city studio campus branch plant factory"
    ).split(),
    "workplace_type": (
        "workplace workplace_type work_type remote remote_policy work_arrangement work_model "
        "work_mode location_type arrangement onsite_remote remote_status remote_type "
        "posting_workplace_type work_pattern working_pattern"
    ).split(),
    "skill": (
        "skill skills required_skills must_have_skills must_haves must_have requirements "
        "tech_stack technologies key_skills competencies core_skills required_competencies "
        "hard_skills stack required must skills_required essential req_skills"
    ).split(),
    "preferred_skill": (
        "nice_to_have nice_to_haves preferred_skills bonus_skills preferred pluses plus_skills "
        "nice desirable nice_have nice_have_skills"
    ).split(),
    "rejection_reason": (
        "rejection_reason reject_reason rejection disqualification_reason decline_reason "
        "reason_for_rejection rejected_because rejection_reasons"
    ).split(),
    "department": "department team dept business_unit division org_unit function".split(),
    "employment_type": (
        "employment_type job_type contract_type commitment employment contract"
    ).split(),
    "experience_years": (
        "years_of_experience min_experience experience_years yoe min_years_experience "
        "experience_required"
    ).split(),
    "salary_range": (
        "salary salary_range compensation pay_range base_salary comp comp_range salary_band "
        "pay_band pay base base_pay range monthly_band annual_band yearly_band monthly_pay "
        "annual_pay"
    ).split(),
    "currency": "currency ccy curr salary_currency pay_currency".split(),
    "visa_sponsorship": (
        "visa visa_sponsorship sponsorship visa_support sponsorship_available work_permit sponsor "
        "work_permit_support permit_support sponsorship_support"
    ).split(),
    "education": "education degree min_education".split(),
    "language": "language languages spoken_languages".split(),
    "industry": "industry sector".split(),
    "hiring_manager": "hiring_manager manager hm reports_to hiring_lead hiring_mgr mgr".split(),
    # an export's "Project" field names the programme a role is hired for, its code name
    "code_name": (
        "code_name codename internal_name project_code internal_code_name project projekt"
    ).split(),
    "headcount": (
        "headcount openings number_of_openings positions_open num_openings number_of_hires "
        "vacancies positions posts number_of_posts seats fte fte_count no_of_hires hires hc heads "
        "how_many"
    ).split(),
    "candidate": "candidate candidate_name applicant applicant_name name_of_candidate".split(),
    "decision": "decision outcome status result recommendation verdict".split(),
    "stage": "stage interview_stage round".split(),
    "reason": "reason reasons notes_reason".split(),
}
#: The labels of the same fields in other European languages (Danish, Dutch, Finnish, French,
#: German, Italian, Norwegian, Polish, Portuguese, Spanish, Swedish), folded: a form written
#: in one language only ("Sted: Oslo", "Lønn: NOK 41 000", "Modalità: ibrido").
LABELS_IN_OTHER_LANGUAGES: dict[str, tuple[str, ...]] = {
    "title": (
        "stilling stillingsbetegnelse stillingstittel tjanstetitel befattning titel jobtitel "
        "stellenbezeichnung berufsbezeichnung poste intitule_du_poste puesto cargo posizione "
        "ruolo functie functietitel stanowisko nimike tehtava"
    ).split(),
    "seniority": "niva niveau nivel livello senioritet erfaringsniveau poziom taso".split(),
    "location": (
        "sted arbeidssted arbejdssted plats arbetsort ort arbeitsort standort dienstort lieu "
        "lieu_de_travail ubicacion localizacion localidad sede luogo sede_di_lavoro locatie "
        "standplaats lokalizacja miejsce_pracy localizacao local_de_trabalho sijainti "
        "paikkakunta lokation"
    ).split(),
    "workplace_type": (
        "arbeidsform arbejdsform arbetsform oppmote arbeitsmodell arbeitsort_modell "
        "modalite modalite_de_travail modalidad modalidad_de_trabajo modalita "
        "modalita_di_lavoro modalidade werkvorm werkplek tryb_pracy tyoskentelymalli"
    ).split(),
    "headcount": (
        "antall antal antall_stillinger antal_stillinger antal_tjanster anzahl "
        "anzahl_stellen nombre_de_postes postes vacantes plazas numero_de_plazas posti "
        "numero_posti aantal aantal_vacatures liczba_etatow vagas lukumaara"
    ).split(),
    "salary_range": (
        "lonn lon loen lonnsspenn lonespann gehalt lohn gehaltsband salaire remuneration "
        "salario sueldo banda_salarial retribuzione stipendio ral salaris wynagrodzenie "
        "remuneracao palkka"
    ).split(),
    "skill": (
        "krav kompetanse kompetencer kompetenser kvalifikationer anforderungen kenntnisse "
        "exigences competences requisitos competencias requisiti competenze vereisten "
        "wymagania vaatimukset"
    ).split(),
    "visa_sponsorship": (
        "visum visumsponsorering visumsponsing arbeitserlaubnis visumsponsoring visado "
        "patrocinio_de_visado patrocinio sponsorizzazione_visto visto parrainage_visa "
        "sponsoring_visa wiza viisumi"
    ).split(),
    "hiring_manager": (
        "ansaettende_leder ansettende_leder ansvarig_chef rekryterande_chef narmaste_chef "
        "chef leder vorgesetzter fuhrungskraft responsable responsable_du_recrutement "
        "responsabile gestor_contratante responsavel leidinggevende przelozony esihenkilo"
    ).split(),
    "department": (
        "afdeling avdeling avdelning abteilung departement departamento reparto "
        "dipartimento dzial osasto"
    ).split(),
    "employment_type": (
        "ansaettelsesform ansettelsesform anstallningsform vertragsart type_de_contrat "
        "tipo_de_contrato tipo_di_contratto contratto dienstverband rodzaj_umowy"
    ).split(),
}
_OTHER_LANGUAGE_LABELS = {
    label: key for key, labels in LABELS_IN_OTHER_LANGUAGES.items() for label in labels
}
KEY_ALIASES: dict[str, str] = {
    alias: key
    for table in (ALIASES, LABELS_IN_OTHER_LANGUAGES)
    for key, aliases in table.items()
    for alias in aliases
}

#: Keys that never become facets: identifiers, timestamps, contact details, free text blobs,
#: a message's headers.
SKIP_KEY = re.compile(
    r"^(?:from|to|cc|bcc|subject|sent|re)$|(^|_)(id|ids|uuid|url|urls|link|email|phone|created|updated|created_at|updated_at|"
    r"modified|timestamp|date|time|description|body|text|notes|comments?|summary)$"
)
FEEDBACK_KEYS = frozenset({"candidate", "decision", "reason", "stage"})
#: Facts a project's notes on candidates state (the others describe the role itself).
CANDIDATE_KEYS = frozenset({"rejection_reason"})

#: How long a reason may be (a sentence: "he needs a visa sponsored from April and this
#: role has no sponsorship"); other values are cut shorter.
REASON_CHARS = 200
SENIORITY_WORDS = {
    "intern": "Intern",
    "entry level": "Entry-level",
    "entry-level": "Entry-level",
    "junior": "Junior",
    "jr": "Junior",
    "mid level": "Mid-level",
    "mid-level": "Mid-level",
    "mid": "Mid-level",
    "medior": "Mid-level",
    "intermediate": "Mid-level",
    "senior": "Senior",
    "sr": "Senior",
    "snr": "Senior",
    "staff": "Staff",
    "principal": "Principal",
    "lead": "Lead",
}
WORKPLACE_WORDS = {
    "remote": "remote",
    "fully remote": "remote",
    "remote first": "remote",
    "hybrid": "hybrid",
    "hyb": "hybrid",
    "on site": "on-site",
    "onsite": "on-site",
    "in office": "on-site",
    "in the office": "on-site",
    "office based": "on-site",
}
#: Keys whose values are a closed set: a question may name any of them ("remote, hybrid or
#: on-site?") whether or not a document of the tree holds it now.
CLOSED_VALUES = {"workplace_type": frozenset(WORKPLACE_WORDS.values())}
#: Words by which a workplace arrangement is described, whatever the phrasing ("work from
#: home", "office-based", "blended: office + home", "in person at the site"): where people
#: work (home or office) and whether the arrangement mixes both.
_REMOTE_WORDS = frozenset(
    "remote home distributed anywhere wfh telecommute teleworking "
    # as European exports write it (es, fr, it, de, nl)
    "remoto remota teletrabajo teletravail distanciel homeoffice thuiswerken".split()
)
_OFFICE_WORDS = frozenset(
    "office onsite premises person campus "
    "presencial oficina presentiel bureau sede ufficio presenza buro kantoor".split()
)
_NEGATIONS = frozenset("not no never non without cannot t".split())  # "won't" folds to "won t"
_MIXED_WORDS = frozenset(
    "hybrid blended mixed mix partly partially split hibrido hibrida hybride ibrido hybrid".split()
)


_SOME_DAYS = re.compile(r"\b(?:[1-4]|one|two|three|four)(?:\s*-\s*[1-4])?\s*(?:days?|x)\b", re.I)


def some_days(text: str) -> bool:
    """Whether a text counts fewer than five days ("3 days in office", "2-3 days on site")."""
    return bool(_SOME_DAYS.search(text))


def workplace_of(text: str) -> str | None:
    """``remote``, ``hybrid`` or ``on-site`` for a description of a workplace arrangement,
    by the words it uses: both home and office, or a word for a mix, is hybrid; else home is
    remote and office is on-site. None when it names neither (and for longer texts, which
    are sentences rather than a field's value)."""
    words = fold(text).split()
    if not words or len(words) > 10 or set(words) & _NEGATIONS:
        return None  # a sentence, or a negated arrangement ("no office attendance needed")
    if fold(text) in WORKPLACE_WORDS:
        return WORKPLACE_WORDS[fold(text)]
    present = set(words)
    # "home" is where one works ("from home", "home-based"), not a "take-home" exercise
    at_home = any(w == "home" and (i == 0 or words[i - 1] != "take") for i, w in enumerate(words))
    remote = bool(present & (_REMOTE_WORDS - {"home"})) or at_home
    office = bool(present & _OFFICE_WORDS) or "on site" in " ".join(words)
    if present & _MIXED_WORDS or (remote and office) or (office and some_days(text)):
        return "hybrid"  # "3 days in office": the rest of the week elsewhere
    if remote:
        return "remote"
    if office:
        return "on-site"
    return None


#: The nouns a count of hires is said in ("3 posts", "headcount is now 3", "two openings").
OPENING_NOUNS = frozenset(
    "headcount opening openings position positions post posts hire hires seat seats vacancy "
    "vacancies fte".split()
)

#: What a number a question asks for may count, for the keys that hold numbers.
NUMBER_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "headcount": (
        "how many people are being hired for the role",
        "the number of openings or hires",
    ),
    "experience_years": ("how many years of experience candidates need",),
}

#: What each canonical key is about, in a few sentences as people ask about it: a question
#: that names none of a key's words is matched to the key by meaning ("what are the top
#: reasons we turn people down?"); the closest sentence counts.
KEY_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "title": ("which roles or job titles are hired for",),
    "location": (
        "where the jobs are located, in which cities",
        "which offices, cities or countries the openings are based in",
    ),
    "workplace_type": (
        "whether the roles are remote, hybrid or on-site in the office",
        "whether people work from home, from the office or a mix of both",
        "the work arrangement or office attendance policy of the jobs",
        "the working setup: in the office every day, some days from home, or fully remote",
    ),
    "skill": (
        "which skills, tools or technologies the openings require",
        "what expertise, qualifications or tech stack candidates need",
    ),
    "rejection_reason": (
        "why candidates were rejected, turned down or declined",
        "the reasons applicants did not move forward or were not hired",
    ),
    "seniority": (
        "what seniority or experience level the roles are",
        "whether the openings are junior, mid-level, senior or lead",
    ),
}


#: The short forms ATS exports write field names in ("JobTtl", "HMgr", "PrimLoc", "wrkMdl").
ABBREVIATIONS = {
    "ttl": "title",
    "tit": "title",
    "grd": "grade",
    "lvl": "level",
    "loc": "location",
    "locs": "locations",
    "mgr": "manager",
    "hmgr": "hiring_manager",
    "cur": "currency",
    "sal": "salary",
    "hc": "headcount",
    "pref": "preferred",
    "wrk": "work",
    "mdl": "model",
    "spons": "sponsorship",
    "prim": "primary",
    "nbr": "number",
    "num": "number",
    "dept": "department",
    "func": "function",
    "cty": "city",
    "ctry": "country",
    "nm": "name",
}


def unabbreviated(key: str) -> str:
    """A snake_case key with its short words written out ("hmgr" -> "hiring_manager")."""
    return "_".join(ABBREVIATIONS.get(p, p) for p in key.split("_"))


#: Keys whose values are people: a field under one ("hm.role") is about the person.
_PERSON_FIELDS = frozenset({"hiring_manager", "candidate"})
#: What a field under a person names when it names the person ("name", "signature").
_NAME_PARTS = frozenset("name full_name signature sign sig display_name".split())
#: Words of a field's name that give the unit of its value, not what it is.
_UNIT_WORDS = frozenset("year yr annual annually month mo monthly gross net pa".split())


def canonical_key(raw_key: str) -> str:
    """Map a raw key onto a canonical key, or its ``snake_case`` form."""
    key = snake_key(raw_key)
    if key in KEY_ALIASES:
        return KEY_ALIASES[key]
    written = unabbreviated(key).split("_")
    for size in (2, 1):  # "hm.nm", "Hiring manager (signature)": the person; "hm.role": theirs
        head = "_".join(written[:size])
        if len(written) > size and KEY_ALIASES.get(head) in _PERSON_FIELDS:
            rest = "_".join(written[size:])
            return KEY_ALIASES[head] if rest in _NAME_PARTS else key
    if (full := unabbreviated(key)) != key and (found := canonical_key(full)) != full:
        return found
    last = key.rsplit("_", 1)[-1]
    # Flattened JSON paths such as ``job_location_city`` or ``posting_title``.
    for size in (3, 2):
        tail = "_".join(key.split("_")[-size:])
        if tail in KEY_ALIASES:
            return KEY_ALIASES[tail]
    if last in KEY_ALIASES and KEY_ALIASES[last] not in FEEDBACK_KEYS:
        return KEY_ALIASES[last]
    parts = key.split("_")
    if len(parts) in (2, 3) and parts[0] in _OTHER_LANGUAGE_LABELS:
        return _OTHER_LANGUAGE_LABELS[parts[0]]  # "Compétences requises", "Lønn brutto"
    for size in (3, 2):  # "Hiring manager (signature)": a known name, then a gloss of it
        head = "_".join(parts[:size])
        if len(parts) > size and head in KEY_ALIASES:
            return KEY_ALIASES[head]
    bare = [p for p in parts if p not in _UNIT_WORDS and not currency_of(p)]
    if bare and len(bare) < len(parts):  # "salary_eur_year", "ral_eur": pay, in its unit
        if (found := canonical_key("_".join(bare))) in ALIASES:
            return found
    if "/" in raw_key:  # "City / Country", "Sted / Location": a label of either name
        for part in raw_key.split("/"):
            if (found := canonical_key(part)) in ALIASES:
                return found
    return key


#: A grade's code beside its level ("L5", "G7", "P3", "IC4", "M2").
_LEVEL_CODE = re.compile(r"\b(?:L|G|P|IC|M|E)\d{1,2}\b")


def _coded_level(value: str) -> str | None:
    """The level a value names beside a grade code or a gloss: what is left, without them,
    when it is a level word ("L4 / Senior" -> Senior); None otherwise ("Senior Associate" is
    no Senior)."""
    bare = fold(_LEVEL_CODE.sub(" ", without_asides(value, " ")).replace("/", " "))
    if bare in SENIORITY_WORDS and bare != fold(value):
        return SENIORITY_WORDS[bare]
    return None


def canonical_value(key: str, value: str) -> str | None:
    """Clean a value and map known vocabularies (workplace, seniority); None drops it."""
    value = clean_value(value, REASON_CHARS if key == "rejection_reason" else 120)
    if key in YES_NO_KEYS and fold(value) == "none":
        return value  # "visa_sponsorship: none" says no
    if not value or value.lower() in {"n/a", "na", "none", "null", "-", "tbd", "unknown"}:
        return None
    if key == "rejection_reason" and fold(value) in FLAG_WORDS:
        return None  # "Reason: no" gives none
    folded = fold(value)
    if key == "workplace_type":
        # "På plats / On-site (base-bound)": a label's languages side by side, either one
        bare = without_asides(value, " ")
        for part in (value, bare, *re.split(r"\s/\s", bare)):
            for word, canon in WORKPLACE_WORDS.items():
                if fold(part) == word or fold(part).startswith(word + " "):
                    return canon
            if said := workplace_of(part):
                return said
        return value
    if key == "seniority" and folded in SENIORITY_WORDS:
        return SENIORITY_WORDS[folded]
    if key == "seniority" and (aside := re.search(r"\(([^()]*)\)", value)):
        # "Medior (mid-level)": a level glossed in a known word is that level.
        if fold(aside.group(1)) in SENIORITY_WORDS:
            return SENIORITY_WORDS[fold(aside.group(1))]
    if key == "seniority" and (level := _coded_level(value)):
        return level  # "L5 – Lead", "Senior (G7)", "Mid (Engineer II)"
    if key == "seniority" and len(folded.split()) > 4:
        # A sentence under a level's name: its leading level word ("senior specialist,
        # reports to ..."), else nothing ("she said senior, but ...").
        first = folded.split()[0]
        return SENIORITY_WORDS.get(first)
    if key == "currency":
        return currency_of(value)
    if key in NUMBER_DESCRIPTIONS and (m := re.match(r"\s*(\d+)\b", value)):
        return m.group(1)  # "2 (Rotterdam x1, Utrecht x1), on-site"
    if key == "location":
        value = without_asides(value).strip() or value  # "Ireland (remote)"
    if key in ("title", "location", "department", "language"):
        return title_case(value)
    if key == "hiring_manager":
        # "Nadia Belkacem. Offer planned at ...": the name, not the sentence after it
        titles = m.group() if (m := _HONORIFIC.match(value)) else ""  # "Prof. Dr. "
        value = titles + re.split(r"(?<=\w\w)\.\s+(?=[A-Z])", value[len(titles) :])[0]
        return _CREDENTIALS.sub("", value) or value  # "Kenji Aramaki, PhD" is Kenji Aramaki
    return value


#: Letters of degrees and titles written after a name (", PhD", ", MD, MBA", ", Ph.D.").
_CREDENTIALS = re.compile(r"(?:,\s*(?:[A-Z][a-z]?\.?){1,2}[A-Z]\.?)+\s*$")


#: Currencies by their codes, signs and names ("k€", "£85-95k", "paid in pounds").
CURRENCIES = {
    "EUR": ("eur", "euro", "euros", "€"),
    "GBP": ("gbp", "pound", "pounds", "sterling", "£"),
    "USD": ("usd", "dollar", "dollars", "us$", "$"),
    "CHF": ("chf", "franc", "francs"),
    "SEK": ("sek", "kronor", "swedish krona", "swedish kronor"),
    "NOK": ("nok", "norwegian krone", "norwegian kroner"),
    "DKK": ("dkk", "danish krone", "danish kroner"),
    "PLN": ("pln", "zloty", "zlotys", "zl"),
    "CAD": ("cad", "c$"),
    "AUD": ("aud", "a$"),
    "INR": ("inr", "rupees", "₹"),
    "JPY": ("jpy", "yen", "¥"),
}
CURRENCY_WORDS = {w: code for code, words in CURRENCIES.items() for w in words}
_CURRENCY = re.compile(
    r"(?<![a-z])("
    + "|".join(
        re.escape(w).replace(r"\ ", r"\s+")
        for w in sorted(CURRENCY_WORDS, key=len, reverse=True)
        if w.replace(" ", "").isalpha()
    )
    + r")(?![a-z])|([€£¥₹$])",
    re.I,
)


def currency_of(text: str) -> str | None:
    """The currency a sum of money is stated in, by its code, sign or name ("EUR 60k",
    "55–68 k€", "£28,000"), or None."""
    m = _CURRENCY.search(text)
    return CURRENCY_WORDS[(m.group(1) or m.group(2)).lower()] if m else None


#: A value that is a bare flag, and what it says ("remote: no", "overall: Yes").
FLAG_WORDS = {"yes": True, "true": True, "y": True, "no": False, "false": False, "n": False}
#: Keys whose values say yes or no ("Skilled Worker visa available", "not sponsored").
YES_NO_KEYS = frozenset({"visa_sponsorship", "is_open"})
_NO_WORDS = frozenset(
    "no not none false unavailable without cannot cant n/a never non nein nee nao".split()
)
_YES_WORDS = frozenset(
    "yes true available offered supported sponsored provided possible y open sponsor can "
    "si oui ja sim".split()
)


def polarity(value: str) -> str | None:
    """ "yes" or "no" for a value of a yes/no key, by its words; None when it says neither."""
    words = set(fold(value).replace("'", "").split())
    if words == {"n"}:
        return "no"  # "sponsor": "N", as "Y" says yes
    if words & _NO_WORDS:
        return "no"
    if words & _YES_WORDS:
        return "yes"
    return None


@lru_cache(maxsize=200_000)  # read for every value a constraint is checked against
def same_value_key(key: str, value: str) -> str:
    """What two values of ``key`` share when they are the same value: the folded value,
    and for a place its name before the first comma ("New York" is "New York, New York",
    "Lisbon" is "Lisbon, Portugal"). Nothing looser: Junior is not Senior, "Mid-Senior
    level" is not "Senior", Backend Engineer is not Frontend Engineer. A qualifier in
    parentheses is not part of the value ("Backend Engineer (Go)", "Berlin (Kreuzberg)"), nor
    is a site word after a city ("Berlin HQ"), a site after a dash ("Rotterdam - Maasstad
    Hospital") or a facility before the city ("St Aldhelm's Hospital, Manchester"). A grade
    is its code ("G7" is "Grade 7")."""
    if key in YES_NO_KEYS and (said := polarity(value)):
        return said  # "Skilled Worker visa available" is a yes
    value = without_asides(value, " ")  # "Backend Engineer (Go)" is a Backend Engineer
    if key == "location":  # "Roma" is Rome, "København" is Copenhagen
        name = place_name(value)
        return fold(city_name(name) or name)
    if key == "hiring_manager":
        return fold(person_of(value))  # "Maja Ek, Cabin Services Manager" is Maja Ek
    if key == "title":  # "Electrical Engineer - Offshore Wind" is an Electrical Engineer
        value = re.split(r"\s[-\u2013\u2014]\s", value)[0]
    if key == "seniority" and (coded := re.fullmatch(r"([a-z])[a-z]*\s*(\d{1,2})", fold(value))):
        return coded.group(1) + coded.group(2)  # "G7" is "Grade 7", "L5" is "Level 5"
    return fold(value)


#: Regions written as their postal codes (US states, Canadian provinces): "Portland, ME" is
#: "Portland, Maine", not "Portland, OR".
REGION_CODES = {
    "al": "alabama", "ak": "alaska", "az": "arizona", "ar": "arkansas", "ca": "california",
    "co": "colorado", "ct": "connecticut", "de": "delaware", "fl": "florida", "ga": "georgia",
    "hi": "hawaii", "id": "idaho", "il": "illinois", "in": "indiana", "ia": "iowa",
    "ks": "kansas", "ky": "kentucky", "la": "louisiana", "me": "maine", "md": "maryland",
    "ma": "massachusetts", "mi": "michigan", "mn": "minnesota", "ms": "mississippi",
    "mo": "missouri", "mt": "montana", "ne": "nebraska", "nv": "nevada", "nh": "new hampshire",
    "nj": "new jersey", "nm": "new mexico", "ny": "new york", "nc": "north carolina",
    "nd": "north dakota", "oh": "ohio", "ok": "oklahoma", "or": "oregon", "pa": "pennsylvania",
    "ri": "rhode island", "sc": "south carolina", "sd": "south dakota", "tn": "tennessee",
    "tx": "texas", "ut": "utah", "vt": "vermont", "va": "virginia", "wa": "washington",
    "wv": "west virginia", "wi": "wisconsin", "wy": "wyoming", "dc": "district of columbia",
    "on": "ontario", "qc": "quebec", "bc": "british columbia", "ab": "alberta",
    "mb": "manitoba", "sk": "saskatchewan", "ns": "nova scotia", "nb": "new brunswick",
}  # fmt: skip


def country_of_region(region: str) -> str | None:
    """The country a region written out by :data:`REGION_CODES` is in."""
    if region in _PROVINCES:
        return "canada"
    return "united states" if region in REGION_CODES.values() else None


#: Short names of the countries whose regions :data:`REGION_CODES` knows, as questions write them.
_COUNTRY_NAMES = {
    "us": "united states",
    "usa": "united states",
    "u s": "united states",
    "america": "united states",
}


def in_country_of(value: str, place: str) -> bool:
    """Whether a place is in the country ``place`` (folded) names: by the country written
    after it ("Madrid, España" is in Spain, "Stockholm, SE" in Sweden), by its region
    ("Denver, CO" is in the US, "Montréal, QC" in Canada), else by its city ("Roma" is in
    Italy; a city of a name several countries share in comparable size is in none of them)."""
    region = region_of(value)
    if region is not None and country_of_region(region) == _COUNTRY_NAMES.get(place, place):
        return True
    code = country_code(place)
    return code is not None and country_of_place(value) == code


def country_of_place(value: str) -> str | None:
    """The ISO code of the country a location is in: the one written after its city (a
    name, "España", or a code in capitals, "SE"), else its city's; None when unknown."""
    for part in re.split(r",|\s[-\u2013\u2014]\s|/", without_asides(value, " "))[1:]:
        part = part.strip()
        if code := country_code(part):
            return code
        if re.fullmatch(r"[A-Z]{2}", part) and country_name(part):
            # "Stockholm, SE", "Berlin, DE"; but "Portland, ME" is in Maine, not Montenegro
            if fold(part) not in REGION_CODES or country_of_city(place_name(value)) == part:
                return part
    if (region := region_of(value)) in REGION_CODES.values():
        # "Portland, ME": a state after the city, in its country
        return {"united states": "US", "canada": "CA"}.get(country_of_region(region) or "")
    name = place_name(value)
    words = name.split()
    # "Stockholm Arlanda", "Oslo Gardermoen": a city named with a place of it
    return country_of_city(name) or (country_of_city(words[0]) if len(words) > 1 else None)


_PROVINCES = frozenset(
    {"ontario", "quebec", "british columbia", "alberta", "manitoba", "saskatchewan"}
    | {"nova scotia", "new brunswick"}
)


def region_of(value: str) -> str | None:
    """The region a place names after its city, written out ("Portland, ME" -> "maine"), or
    None when it names none."""
    parts = [p.strip() for p in value.split(",")[1:2]]
    words = value.split()
    if not parts and len(words) > 1 and words[-1].isupper() and fold(words[-1]) in REGION_CODES:
        parts = [words[-1]]  # "Austin TX"
    if not parts or not fold(parts[0]):
        return None
    region = fold(parts[0])
    return REGION_CODES.get(region, region)


def same_place(a: str, b: str) -> bool:
    """Whether two locations are one place: the same city, in no two different regions
    ("Portland, ME" is "Portland, Maine", and not "Portland, OR"). A region is compared only
    where both name one of the same kind (a state, not a country beside it)."""
    if same_value_key("location", a) != same_value_key("location", b):
        return False
    ra, rb = region_of(a), region_of(b)
    known = set(REGION_CODES.values())
    return not (ra and rb and ra != rb and ra in known and rb in known)


def place_name(value: str) -> str:
    """The city of a place as written, without its region, country or site ("Rotterdam" of
    "Rotterdam - Maasstad Hospital", "Manchester" of "St Aldhelm's Hospital, Manchester",
    "Berlin" of "Berlin HQ, Germany")."""
    value = without_asides(value, " ")
    parts = [p.split() for p in re.split(r",|\s[-\u2013\u2014]\s", value) if fold(p)]
    for words in parts:
        while len(words) > 1 and fold(words[-1]) in _SITE_WORDS:
            words.pop()  # "Berlin HQ" is Berlin
    if len(parts) > 1 and set(fold(" ".join(parts[0])).split()) & _FACILITY_WORDS:
        parts = parts[1:]  # "St Aldhelm's Hospital, Manchester" is Manchester
    words = parts[0] if parts else value.split()
    if len(words) > 1 and words[-1].isupper() and fold(words[-1]) in REGION_CODES:
        words = words[:-1]  # "Austin TX" is Austin
    name = " ".join(words)
    if len(parts) > 1 and not city_name(name):
        # "Sint-Servaas, Maastricht": a site first, its city after it
        name = next((" ".join(p) for p in parts[1:] if city_name(" ".join(p))), name)
    if len(name.split()) > 1 and not city_name(name):
        # "Hallward Klinikum Aachen", "Stockholm Arlanda", "Dublin 2": the city of a site
        first, *_, last = name.split()
        name = next((w for w in (last, first) if city_name(w)), name)
    return name


def names_a_site(value: str) -> bool:
    """A place written with a site or facility of it ("Rotterdam - Maasstad Hospital",
    "Berlin HQ"), not only as a city and its region or country."""
    words = set(fold(without_asides(value, " ")).split())
    return bool(words & (_SITE_WORDS | _FACILITY_WORDS)) or bool(
        re.search(r"\s[-\u2013\u2014]\s", value)
    )


#: Words after a city that name a site of it, not another place.
_SITE_WORDS = frozenset("hq headquarters office offices campus hub lab site area metro".split())
#: Words of a facility named before its city ("Northmere Leeds General, Leeds").
_FACILITY_WORDS = frozenset(
    "hospital general clinic centre center campus building park port depot warehouse plant "
    "factory site office hq headquarters hub lab".split()
)


def key_rank(key: str, emphasized: Sequence[str] = ()) -> tuple[int, str]:
    """Sort key of a facet key: emphasized hint keys, then canonical order, then the rest."""
    if key in emphasized:
        return (-len(emphasized) + list(emphasized).index(key), key)
    if key in KEY_ORDER:
        return (KEY_ORDER.index(key), key)
    return (len(KEY_ORDER), key)


#: How answers and summaries name a facet key, in the plural.
_KEY_LABEL = {
    "title": "roles",
    "location": "locations",
    "workplace_type": "workplace types",
    "skill": "required skills",
    "preferred_skill": "nice-to-have skills",
    "rejection_reason": "rejection reasons",
    "seniority": "seniority levels",
}


def key_label(key: str) -> str:
    """How answers and summaries name a facet key, in the plural."""
    words = key.replace("_", " ").strip()
    if words.split(" ")[0] in ("is", "has", "can", "needs"):
        return _KEY_LABEL.get(key, words)  # a yes/no field: "is open", not "is opens"
    return _KEY_LABEL.get(key, pluralize(words))


#: Words that head a job title: a value ending with one is a title.
TITLE_HEADS = frozenset(
    "engineer scientist manager designer analyst developer architect recruiter specialist "
    "consultant administrator director researcher representative accountant coordinator "
    "officer writer strategist technician marketer executive associate advisor lead sre nurse "
    "teacher physician therapist pharmacist programmer editor assistant supervisor "
    "operator clerk agent counsel attorney lawyer buyer planner liaison partner head "
    "scientist specialist economist chemist physicist dentist journalist artist linguist "
    "statistician illustrator dispatcher driver controller mechanic radiographer declarant "
    "auditor cashier chef pilot welder paralegal porter courier surveyor underwriter actuary "
    "broker trader".split()
)
#: Titles before a name ("Dr. Pieter Claes", "Prof. Dr. Klaus Rennert"): no part of who.
_HONORIFIC = re.compile(
    r"^(?:(?:Dr|Prof|Mr|Mrs|Ms|Mx|Dott|Ing|Mag|Drs|Ir|Mme|Mlle|Sr|Sra|Hr|Fr)\.?\s+)+"
)
#: Words of a position held, besides :data:`TITLE_HEADS` ("VP Revenue", "Chief Pilot").
_POSITION_WORDS = frozenset("vp svp evp chief ceo cto coo cfo cpo cmo president founder".split())


def person_of(value: str) -> str:
    """The person a value names, without the position written after the name ("Maja Ek" of
    "Maja Ek, Cabin Services Manager", "Andris Kalniņš (Base Maintenance Manager)" or
    "Inês Barros, Director of Rooms – Iberia"). Two people named together stay two."""
    bare = _HONORIFIC.sub("", without_asides(value, " ")).strip()
    parts = re.split(r",|\s[-\u2013\u2014]\s", bare, maxsplit=1)
    rest = parts[1].strip() if len(parts) == 2 else ""
    # "Head of Radiology", "cheffe de service maternité": a position, not a second person
    if rest and (rest[:1].islower() or set(fold(rest).split()) & (TITLE_HEADS | _POSITION_WORDS)):
        return parts[0].strip()
    return bare


#: An occupation by its suffix ("Dietician", "Radiologist"); "-ist" alone is too common in
#: surnames ("Lindqvist"), its occupations are listed above.
_OCCUPATION_SUFFIX = re.compile(r"(?:ician|ologist)$")


def is_title(value: str) -> bool:
    """A value that names an occupation: a few words, the last one a word for a job
    (:data:`TITLE_HEADS`, or an occupation's suffix: "-ician", "-ologist"), and not itself the
    name of an attribute (a hiring team's "capacity: Hiring Manager" is a part one plays)."""
    words = fold(value).split()
    if not words or len(words) > 6 or "_".join(words) in KEY_ALIASES:
        return False
    head = words[-1]
    return head in TITLE_HEADS or bool(_OCCUPATION_SUFFIX.search(head))
