"""physai.cli.outputs: an output path is refused before any work when writing it could fail or destroy
something, a write is all or nothing, and text from a recording can neither drive a terminal nor close a comment."""

import os
import stat
import xml.etree.ElementTree as ElementTree

import pytest

from physai.cli import outputs


def _check(path, **kwargs):
    return outputs.check_output(path, option='--out', suffix='.xml', **kwargs)


def test_a_new_file_in_a_writable_folder_is_accepted_and_nothing_is_left_behind(tmp_path):
    assert _check(tmp_path / 'arm.xml') == tmp_path / 'arm.xml'
    assert list(tmp_path.iterdir()) == []  # the write probe is removed


@pytest.mark.parametrize('make, words', [
    (lambda d: d / 'arm.urdf', ['.xml', 'arm.urdf']),
    (lambda d: d / 'missing' / 'arm.xml', ['existing folder']),
    (lambda d: (d / 'dir.xml').mkdir() or d / 'dir.xml', ['must name a file', 'folder']),
    (lambda d: (d / 'old.xml').write_text('mine') and d / 'old.xml', ['--force', 'exists']),
])
def test_paths_that_cannot_be_written_or_would_replace_a_file_are_refused_by_name(tmp_path, make, words):
    with pytest.raises(ValueError) as err:
        _check(make(tmp_path))
    assert str(err.value).startswith('--out must') and all(w in str(err.value) for w in words), err.value


def test_an_existing_file_is_replaced_only_with_force_and_never_if_read_only(tmp_path):
    old = tmp_path / 'old.xml'
    old.write_text('mine')
    assert _check(old, force=True) == old
    old.chmod(stat.S_IRUSR)
    with pytest.raises(ValueError, match="--out must be writable, got '.*old.xml', which is read-only"):
        _check(old, force=True)


def test_a_symbolic_link_is_never_written_through_even_with_force(tmp_path):
    victim = tmp_path / 'victim.txt'
    victim.write_text('not an MJCF file')
    link = tmp_path / 'arm.xml'
    link.symlink_to(victim)
    with pytest.raises(ValueError, match='must not be a symbolic link .*victim.txt'):
        _check(link, force=True)
    dangling = tmp_path / 'gone.xml'
    dangling.symlink_to(tmp_path / 'nowhere.xml')
    with pytest.raises(ValueError, match='symbolic link'):
        _check(dangling)
    assert victim.read_text() == 'not an MJCF file'


def test_a_folder_the_command_reads_is_refused_however_the_path_reaches_it(tmp_path):
    model = tmp_path / 'menagerie' / 'robotstudio_so101'
    (model / 'assets').mkdir(parents=True)
    (tmp_path / 'shortcut').symlink_to(model)  # a path through a linked folder lands in the model's folder
    for path in (model / 'so101.xml', tmp_path / 'shortcut' / 'fitted.xml', model / 'assets' / '..' / 'x.xml'):
        with pytest.raises(ValueError, match=r"must not be inside the model's folder \(.*robotstudio_so101\)"):
            _check(path, force=True, keep_out=[("the model's folder", model)])
    assert _check(tmp_path / 'fitted.xml', keep_out=[("the model's folder", model)]) == tmp_path / 'fitted.xml'


def test_a_folder_that_takes_no_new_file_is_refused_before_any_work(tmp_path, monkeypatch):
    def refuse(**kwargs):
        raise PermissionError(13, 'Permission denied')
    monkeypatch.setattr(outputs.tempfile, 'mkstemp', refuse)  # as a read-only folder answers (root ignores modes)
    with pytest.raises(ValueError, match="must be in a folder you can write to, got .*: Permission denied"):
        _check(tmp_path / 'arm.xml')


def test_an_atomic_write_replaces_the_file_whole_and_keeps_its_permissions(tmp_path):
    path = tmp_path / 'arm.xml'
    path.write_text('old')
    path.chmod(0o640)
    outputs.write_atomic(path, lambda f: f.write(b'new'))
    assert path.read_text() == 'new' and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ['arm.xml']


def test_a_new_file_gets_the_umask_permissions_not_the_private_ones_of_a_temporary_file(tmp_path):
    umask = os.umask(0o022)
    try:
        path = outputs.write_atomic(tmp_path / 'new.xml', lambda f: f.write(b'<mujoco/>'))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.parametrize('stop', [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_the_old_file_whole_and_no_temporary_file(tmp_path, stop):
    path = tmp_path / 'arm.xml'
    path.write_text('the old model')

    def half(f):
        f.write(b'<mujoco> half of it')
        raise stop()

    with pytest.raises(stop):
        outputs.write_atomic(path, half)
    assert path.read_text() == 'the old model'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['arm.xml']


def test_an_atomic_write_replaces_a_link_that_appeared_late_not_its_target(tmp_path):
    """Checked before the fit, a link made during it: os.replace swaps the link itself, the target is untouched."""
    victim = tmp_path / 'victim.txt'
    victim.write_text('keep me')
    (tmp_path / 'arm.xml').symlink_to(victim)
    outputs.write_atomic(tmp_path / 'arm.xml', lambda f: f.write(b'<mujoco/>'))
    assert victim.read_text() == 'keep me' and not (tmp_path / 'arm.xml').is_symlink()


def _another_run_writes(path, text):
    """A ``write`` for write_atomic during which another run creates ``path`` (the race: checked absent at the start,
    there at the end)."""
    def write(f):
        f.write(b'<mujoco> this run')
        path.write_text(text)
    return write


def test_a_file_that_appears_while_the_command_runs_is_kept_unless_it_may_be_replaced(tmp_path):
    """--out was checked at the start and replaced at the end: a file made in between (a second run on the same name)
    was overwritten without --force. Published with a link, it is kept and nothing is left behind."""
    path = tmp_path / 'arm.xml'
    with pytest.raises(FileExistsError, match=r'arm.xml appeared while the command ran \(another run, or someone '
                                              r'else\) and is kept as it is: nothing was written over it; add --force'):
        outputs.write_atomic(path, _another_run_writes(path, 'the other run'), replace=False)
    assert path.read_text() == 'the other run' and sorted(p.name for p in tmp_path.iterdir()) == ['arm.xml']
    outputs.write_atomic(path, _another_run_writes(path, 'the other run'), replace=True)  # --force
    assert path.read_text() == '<mujoco> this run'


def test_a_new_file_is_published_whole_with_its_permissions_where_there_are_no_hard_links(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(os, 'link', no_links)
    path = outputs.write_atomic(tmp_path / 'arm.xml', lambda f: f.write(b'<mujoco/>'), replace=False)
    assert path.read_bytes() == b'<mujoco/>' and sorted(p.name for p in tmp_path.iterdir()) == ['arm.xml']
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # not the placeholder's private 0o600
    with pytest.raises(FileExistsError, match='appeared while the command ran'):
        outputs.write_atomic(path, lambda f: f.write(b'again'), replace=False)
    assert path.read_bytes() == b'<mujoco/>' and sorted(p.name for p in tmp_path.iterdir()) == ['arm.xml']


@pytest.mark.parametrize('hostile', ['\x1b[2J\x1b[31mred', 'two\nlines', 'bell\x07', 'rtl \u202eevil', 'tab\there',
                                     'nul\x00', 'del\x7f', 'c1 \x9b31m'])
def test_inert_text_prints_no_control_character_and_says_what_was_there(hostile):
    text = outputs.inert(hostile)
    assert text.isprintable() and '\\' in text
    assert text.encode('ascii', 'backslashreplace').decode('unicode_escape') == hostile  # nothing lost


def test_inert_text_keeps_ordinary_text_and_other_scripts_as_they_are():
    for text in ('recording so101_follower', 'données/épisode 3', '机器人', 'a - b -- c'):
        assert outputs.inert(text) == text


@pytest.mark.parametrize('hostile', ['x--->/<option gravity="0 0 9.81"/>', '--', '---', '-', 'a-', '<!-- -->',
                                     '- -->', '\x1b]0;title\x07-->', '-' * 7 + '>'])
def test_comment_text_can_never_close_or_break_an_xml_comment(hostile):
    body = outputs.comment_text(hostile)
    assert '--' not in body and not body.endswith('-') and body.isprintable()
    document = f'<mujoco><!--{body}--><option gravity="0 0 -9.81"/></mujoco>'
    root = ElementTree.fromstring(document)  # the comment is one comment: the document parses, one child
    assert [child.tag for child in root] == ['option'] and root[0].get('gravity') == '0 0 -9.81'
