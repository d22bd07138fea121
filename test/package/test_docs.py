"""The README and docs/: generated tables current, links that resolve, no diary, a Python snippet that runs."""
import contextlib
import io
import pathlib
import re
import tomllib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / 'README.md'
PAGES = [README] + sorted((ROOT / 'docs').glob('*.md'))
MAX_README_LINES = 250

#: References a reader cannot follow, and text that only holds on one day or one host.
FORBIDDEN = {
    'issue reference': re.compile(r'\bissues?\s+\d+|#\d+\b', re.IGNORECASE),
    'host-specific note': re.compile(r'\bthis (?:\d+-core )?(?:machine|host|session)\b|\bdevelopment machine\b',
                                     re.IGNORECASE),
    'day-specific note': re.compile(r'\btoday\b|\byesterday\b|\bthis run\b', re.IGNORECASE),
    'date': re.compile(r'\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2} (?:January|February|March|April|May|June|July|August|'
                       r'September|October|November|December)\b|\b(?:January|February|March|April|May|June|July|'
                       r'August|September|October|November|December) \d{4}\b'),
}
#: Top-level folders of the repository that pages name paths in.
FOLDERS = ('ik_solver', 'ik_solver_interfaces', 'ik_solver_demos', 'test', 'config', 'urdf', 'launch', 'scripts',
           'docs')
#: A module path inside a package (``ros/spin.py``): the folder of its package in the repository.
PACKAGE_FOLDERS = {'core': 'ik_solver', 'motion': 'ik_solver', 'collision': 'ik_solver', 'ros': 'ik_solver',
                   'sim': 'ik_solver_demos/ik_solver_demos', 'tools': 'ik_solver_demos/ik_solver_demos'}
#: A file path in backticks: from the repository root, or a module path inside a package.
PATH = re.compile(r'`((?:' + '|'.join(FOLDERS) + r')/[\w./*-]*|(?:' + '|'.join(PACKAGE_FOLDERS) + r')/\w+\.py)`')
#: ``python -m <module>`` and ``ros2 run <package> <executable>`` commands of the two Python packages.
MODULE_COMMAND = re.compile(r'python3? -m (ik_solver(?:_demos)?(?:\.\w+)*)(?![.\w<])')
RUN_COMMAND = re.compile(r'ros2 run (ik_solver(?:_demos)?) (\w+)')
#: Where each Python package's sources and pyproject.toml are.
PACKAGE_ROOTS = {'ik_solver': ROOT, 'ik_solver_demos': ROOT / 'ik_solver_demos'}
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r'^```.*?^```', re.MULTILINE | re.DOTALL)


def _prose(text):
    """Return ``text`` without fenced code blocks (their '#' are comments, not links)."""
    return FENCE.sub('', text)


def _slug(heading):
    """Return the anchor GitHub gives a Markdown heading."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return text.replace(' ', '-')


def _anchors(path):
    return {_slug(line.lstrip('#')) for line in _prose(path.read_text()).splitlines() if line.startswith('#')}


def test_parameter_page_is_current():
    pytest.importorskip('rclpy', reason='the parameter tables are declared with rclpy types')
    from ik_solver_demos.tools import parameter_docs
    current = parameter_docs.OUTPUT.read_text()
    assert current == parameter_docs.render(), \
        'docs/parameters.md is out of date: run python -m ik_solver_demos.tools.parameter_docs'


def test_readme_is_short():
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, f'README.md has {lines} lines; move detail to docs/'


@pytest.mark.parametrize('page', PAGES, ids=lambda p: p.name)
def test_no_diary_or_issue_numbers(page):
    found = [f'{page.name}:{number}: {kind}: {line.strip()}'
             for number, line in enumerate(page.read_text().splitlines(), 1)
             for kind, pattern in FORBIDDEN.items() if pattern.search(line)]
    assert not found, '\n'.join(found)


@pytest.mark.parametrize('page', PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r'[a-z][a-z0-9+.-]*:', target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition('#')
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f'{target}: no such file')
        elif anchor and linked.suffix == '.md' and anchor not in _anchors(linked):
            broken.append(f'{target}: no heading #{anchor} in {linked.name}')
    assert not broken, f'{page.name}: ' + '; '.join(broken)


@pytest.mark.parametrize('page', PAGES, ids=lambda p: p.name)
def test_named_files_exist(page):
    """Every repository path a page names in backticks exists (a glob matches at least one file)."""
    missing = []
    for path in PATH.findall(page.read_text()):
        first = path.split('/')[0]
        base = ROOT if first in FOLDERS else ROOT / PACKAGE_FOLDERS[first]
        if not list(base.glob(path.rstrip('/'))):
            missing.append(path)
    assert not missing, f'{page.name} names files that do not exist: {missing}'


@pytest.mark.parametrize('page', PAGES, ids=lambda p: p.name)
def test_commands_name_real_programs(page):
    """Every ``python -m`` module exists; every ``ros2 run`` executable is a console script of that package."""
    text = page.read_text()
    wrong = []
    for module in MODULE_COMMAND.findall(text):
        path = PACKAGE_ROOTS[module.split('.')[0]] / module.replace('.', '/')
        if not path.with_suffix('.py').exists() and not (path / '__main__.py').exists():
            wrong.append(module)
    for package, name in RUN_COMMAND.findall(text):
        scripts = tomllib.loads((PACKAGE_ROOTS[package] / 'pyproject.toml').read_text())['project']['scripts']
        if name not in scripts:
            wrong.append(f'ros2 run {package} {name}')
    assert not wrong, f'{page.name}: {wrong}'


def test_every_docs_page_is_in_the_index():
    index = (ROOT / 'docs' / 'index.md').read_text()
    missing = [p.name for p in PAGES[1:] if p.name != 'index.md' and f']({p.name})' not in index]
    assert not missing, f'docs/index.md does not link {missing}'


def test_layout_lists_every_module():
    """docs/design.md's layout table names every module of both Python packages in its folder's row."""
    design = (ROOT / 'docs' / 'design.md').read_text()
    rows = {m.group(1): m.group(0)
            for m in re.finditer(r'^\| `(ik_solver(?:_demos)?/[\w/]*)` \|.*$', design, re.MULTILINE)}
    tops = ('ik_solver/', 'ik_solver_demos/ik_solver_demos/')
    missing = []
    for path in sorted((ROOT / 'ik_solver').rglob('*.py')) + sorted((ROOT / tops[1]).rglob('*.py')):
        folder = path.parent.relative_to(ROOT).as_posix() + '/'
        if path.name == '__init__.py' and folder not in tops:
            continue
        if f'`{path.name}`' not in rows.get(folder, ''):
            missing.append(folder + path.name)
    assert not missing, f'docs/design.md, Layout: add {missing}'
    gone = [folder + name for folder, row in rows.items() for name in re.findall(r'`(\w+\.py)`', row)
            if not (ROOT / folder / name).exists()]
    assert not gone, f'docs/design.md, Layout: no such module {gone}'


def test_readme_python_snippet_runs(monkeypatch):
    """The tour's first Python block runs as written from the repository root, and its solution is right."""
    snippet = re.search(r'^```python\n(.*?)^```', README.read_text(), re.MULTILINE | re.DOTALL).group(1)
    monkeypatch.chdir(ROOT)  # the snippet names urdf/ik7.urdf.xacro relative to the repository
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(snippet, 'README.md', 'exec'), namespace)
    assert printed.getvalue().strip(), 'the snippet prints what it solved'
    result, chain, target = namespace['result'], namespace['chain'], namespace['target']
    assert result.success
    reached = chain.fk(result.joints)  # the solved joints put the tip on the target (FK round trip)
    assert np.allclose(reached, target, atol=1e-4)
