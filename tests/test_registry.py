"""physai.experiments.registry: the cache behind the live panels, and the fixed-precision table and the JSON
the command line prints."""

import json
import math

from physai.experiments import registry


def test_cached_keys_only_on_the_parameters_it_names():
    @registry.cached(maxsize=2)
    def square(a, b=1):
        return a * a + b

    assert square(a=3, unrelated='ignored') == 10
    assert square(a=3, unrelated='changed') == 10
    assert square.calls == 1
    assert square(a=3, b=2) == 11 and square.calls == 2
    square(a=4), square(a=5), square(a=3)  # the oldest entries were evicted
    assert square.calls == 5
    assert square.depends_on == ('a', 'b')


def test_table_uses_fixed_precision():
    rows = [{'x': 1 / 3, 'y': [1.0, 2.0], 'z': 'ok', 'w': math.nan}]
    assert registry.format_table(rows, [('x', '.3f'), ('y', '.1f'), ('z', 's'), ('w', '.2f')]) == (
        '    x        y   z    w\n0.333  1.0 2.0  ok  nan')


def test_nan_becomes_null_in_json():
    assert json.loads(registry.to_json([{'a': math.nan, 'b': 1.5}])) == [{'a': None, 'b': 1.5}]


def test_a_table_with_a_missing_key_or_a_bad_column_names_what_is_wrong():
    """A missing key once ended in a bare KeyError."""
    import pytest
    with pytest.raises(ValueError,
                       match=r'rows\[1\] must have a value for every column, got none for kv \(it has kp\)'):
        registry.format_table([{'kp': 1.0, 'kv': 2.0}, {'kp': 3.0}], [('kp', '.1f'), ('kv', '.1f')])
    with pytest.raises(ValueError, match=r'rows\[0\] must be a dict'):
        registry.format_table([[1.0]], [('kp', '.1f')])
    with pytest.raises(ValueError, match=r'columns must be \(key, format\) or \(key, format, unit\) entries'):
        registry.format_table([{'kp': 1.0}], ['kp'])
    with pytest.raises(ValueError, match=r"every value must fit its column's format \(kp: \.1q\)"):
        registry.format_table([{'kp': 1.0}], [('kp', '.1q')])


def test_the_registry_imports_every_module_that_registers_an_experiment():
    """PROVIDERS, the modules the registry imports on first look-up, are exactly the modules of physai that register an
    experiment (a new chapter's module, or a module split in two, must be listed there, or its tables would be missing
    from ``python -m physai list``); and the experiments the command line names come from exactly those modules."""
    import ast
    import pathlib

    root = pathlib.Path(registry.__file__).parents[1]
    registering = set()
    for path in sorted(root.rglob('*.py')):
        if path.name == 'registry.py':
            continue
        tree = ast.parse(path.read_text(encoding='utf-8'))
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and (getattr(node.func, 'id', None) == 'experiment' or getattr(node.func, 'attr', None) == 'experiment')]
        if calls:
            registering.add('.'.join(('physai',) + path.relative_to(root).with_suffix('').parts))
    assert set(registry.PROVIDERS) == registering and len(registry.PROVIDERS) == len(registering)
    registered_by = {registry.get(name).func.__module__ for name in registry.names()}
    assert registered_by == registering
