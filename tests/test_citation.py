"""How to cite the book: CITATION.cff valid against the Citation File Format 1.2.0 schema (a copy in tests/data) and in
step with the version; paper/paper.md in the structure JOSE (the Journal of Open Source Education) asks of a paper,
with every citation in paper/paper.bib; the version on the front page and in the changelog."""

import datetime
import pathlib
import re
import tomllib

import jsonschema
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / 'pyproject.toml').read_text(encoding='utf-8'))['project']['version']


def as_strings(value):
    """YAML dates as the ISO strings the schema expects (its note to tool implementers asks for this cast)."""
    if isinstance(value, dict):
        return {key: as_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_strings(item) for item in value]
    return value.isoformat() if isinstance(value, datetime.date) else value


def citation() -> dict:
    return as_strings(yaml.safe_load((ROOT / 'CITATION.cff').read_text(encoding='utf-8')))


def test_citation_file_is_valid_against_the_format_schema():
    schema = yaml.safe_load((ROOT / 'tests' / 'data' / 'citation-file-format-1.2.0.schema.json').read_text(
        encoding='utf-8'))
    jsonschema.validate(citation(), schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def test_the_schema_check_would_catch_a_broken_citation_file():
    schema = yaml.safe_load((ROOT / 'tests' / 'data' / 'citation-file-format-1.2.0.schema.json').read_text(
        encoding='utf-8'))
    broken = {key: value for key, value in citation().items() if key != 'authors'}
    with pytest.raises(jsonschema.ValidationError, match='authors'):
        jsonschema.validate(broken, schema)


def test_citation_file_carries_the_version_and_the_repository():
    cff = citation()
    config = yaml.safe_load((ROOT / '_config.yml').read_text(encoding='utf-8'))
    assert cff['version'] == VERSION == cff['preferred-citation']['edition']
    assert cff['repository-code'] == config['repository']['url'] == cff['preferred-citation']['url']
    assert cff['title'] == cff['preferred-citation']['title']


def paper() -> tuple[dict, str]:
    text = (ROOT / 'paper' / 'paper.md').read_text(encoding='utf-8')
    _, front, body = text.split('---\n', 2)
    return yaml.safe_load(front), body


def bib_keys() -> dict[str, str]:
    """Each entry of paper.bib: key -> its whole text."""
    text = (ROOT / 'paper' / 'paper.bib').read_text(encoding='utf-8')
    entries = re.split(r'\n(?=@)', text.strip())
    return {re.match(r'@\w+\{([^,]+),', entry).group(1): entry for entry in entries}


def test_paper_has_the_front_matter_and_sections_jose_asks_for():
    front, body = paper()
    for key in ('title', 'tags', 'authors', 'affiliations', 'date', 'bibliography'):
        assert front.get(key), f'paper.md front matter lacks {key!r}'
    assert (ROOT / 'paper' / front['bibliography']).exists()
    indices = {affiliation['index'] for affiliation in front['affiliations']}
    assert all(author['affiliation'] in indices for author in front['authors'])
    headings = re.findall(r'^# (.+)$', body, flags=re.MULTILINE)
    for section in ('Summary', 'Statement of need', 'Learning objectives', 'Story of the book', 'References'):
        assert section in headings, f'paper.md lacks the section {section!r} (has {headings})'
    assert headings[-1] == 'References'


def test_every_citation_in_the_paper_is_in_its_bibliography_and_every_entry_is_cited():
    _, body = paper()
    cited = set(re.findall(r'@([\w:-]+)', ' '.join(re.findall(r'\[([^\]]*@[^\]]*)\]', body))))
    keys = bib_keys()
    assert cited, 'paper.md cites nothing'
    assert cited <= set(keys), f'cited but not in paper.bib: {sorted(cited - set(keys))}'
    assert set(keys) <= cited, f'in paper.bib but never cited: {sorted(set(keys) - cited)}'
    for key, entry in keys.items():
        for field in ('author', 'title', 'year'):
            assert re.search(rf'\b{field}\s*=', entry), f'paper.bib {key}: no {field}'


def test_front_page_shows_the_version_and_how_to_cite():
    intro = (ROOT / 'book' / 'intro.md').read_text(encoding='utf-8')
    config = yaml.safe_load((ROOT / '_config.yml').read_text(encoding='utf-8'))
    assert config['parse']['myst_substitutions']['version'] == VERSION
    assert '{{ version }}' in intro
    assert '## Cite this book' in intro and 'CITATION.cff' in intro


def test_changelog_has_a_section_for_this_version_with_the_engines_it_was_verified_on():
    changelog = (ROOT / 'CHANGELOG.md').read_text(encoding='utf-8')
    section = changelog.split(f'## {VERSION} ', 1)[1].split('\n## ', 1)[0]
    for words in ('Readers of the book', 'Learners on Colab', '`fit-servo` users', 'Verified on', 'MuJoCo 3.17.0',
                  '@mujoco/mujoco'):
        assert words in section, f'CHANGELOG.md {VERSION}: no {words!r}'
