"""Bad input raises NeffError with the status libnrt returns for it
(spec/parse.md gates 1 and 2), the stage that refused it, and a message."""

import struct

import pytest

import neffld
from conftest import FIXTURES, LARGE, NAME, PAYLOAD, SMALL, VERSION_MAJOR


def raises(fn, *args, **kw):
    with pytest.raises(neffld.NeffError) as e:
        fn(*args, **kw)
    err = e.value
    assert isinstance(err, Exception)
    assert err.message
    if err.message.isprintable():
        assert err.message in str(err)
    return err


@pytest.mark.parametrize("fn", [neffld.inspect, neffld.load])
def test_a_buffer_shorter_than_the_header_is_nrt_invalid(fn):
    err = raises(fn, b"\0" * 0x3FF)
    assert (err.status, err.status_name, err.stage) == (2, "NRT_INVALID", "container")


@pytest.mark.parametrize("fn", [neffld.inspect, neffld.load])
def test_an_unsupported_major_version_is_nrt_unsupported_neff_version(fn, small_bytes):
    data = bytearray(small_bytes)
    struct.pack_into("<Q", data, VERSION_MAJOR, 3)
    err = raises(fn, bytes(data))
    assert (err.status, err.status_name, err.stage) == (10, "NRT_UNSUPPORTED_NEFF_VERSION", "container")


def test_a_data_size_past_the_end_is_nrt_invalid(small_bytes):
    data = bytearray(small_bytes)
    struct.pack_into("<Q", data, 0x10, len(data))  # data_size > size - 1024
    err = raises(neffld.inspect, bytes(data))
    assert (err.status, err.stage) == (2, "container")


def test_loading_on_another_architecture_is_refused_by_the_arch_gate():
    # A trn2 NEFF on a trn3 device: "Loading a NEFF compiled for a different
    # arch is not allowed" -> NRT_INVALID.
    err = raises(neffld.load, SMALL, arch="trn3")
    assert err.status == 2
    assert "different arch" in err.message


def test_a_missing_file_and_bad_arguments_raise_neff_error(tmp_path):
    err = raises(neffld.inspect, tmp_path / "absent.neff")
    assert (err.status, err.stage) == (1, "io")
    assert "absent.neff" in err.message
    assert raises(neffld.load, SMALL, arch="trn9").status == 2
    assert raises(neffld.load, SMALL, device="gpu").status == 2


def test_one_rule_for_every_argument_mistake(tmp_path):
    # A type the function does not take is a TypeError, whichever function.
    for call in (
        lambda: neffld.inspect(3),
        lambda: neffld.verify([str(SMALL)]),
        lambda: neffld.load(3.5),
        lambda: neffld.compare(SMALL, 3),
        lambda: neffld.load(SMALL, arch=2),
        lambda: neffld.load(SMALL, start_core="0"),
        lambda: neffld.plan(SMALL, instance=5),
        lambda: neffld.plan(SMALL, lnc="2"),
        lambda: neffld.plan(SMALL, max_inflated="1GiB"),
    ):
        with pytest.raises(TypeError):
            call()
    # A value neffld refuses is NeffError "usage", NRT_INVALID, as the
    # command reports a refused flag -- never ValueError or OverflowError.
    for call in (
        lambda: neffld.load(SMALL, arch="trn9"),
        lambda: neffld.load(SMALL, device="gpu"),
        lambda: neffld.load(SMALL, runtime="2.26"),
        lambda: neffld.load(SMALL, start_core=-2),
        lambda: neffld.load(SMALL, start_core=2**64),
        lambda: neffld.plan(SMALL, lnc=0),
        lambda: neffld.plan(SMALL, lnc=-1),
        lambda: neffld.plan(SMALL, lnc=2**40),
        lambda: neffld.plan(SMALL, lnc=3),
        lambda: neffld.plan(SMALL, max_inflated=-1),
        lambda: neffld.plan(SMALL, instance="trn99"),
        lambda: neffld.plan(SMALL, tensors=["kv=2XB@0"]),
        lambda: neffld.plan_argv(["--frobnicate"]),
    ):
        err = raises(call)
        assert (err.stage, err.status, err.status_name) == ("usage", 2, "NRT_INVALID")
    # A file that cannot be read is NeffError "io", NRT_FAILURE, whichever
    # function reads it (load said "input", NRT_INVALID; plan "io").
    absent = tmp_path / "absent.neff"
    for call in (
        lambda: neffld.inspect(absent),
        lambda: neffld.verify(absent),
        lambda: neffld.load(absent),
        lambda: neffld.load(str(absent)),
        lambda: neffld.compare(absent, tmp_path / "absent.ntff"),
        lambda: neffld.compare(SMALL, tmp_path / "absent.neff"),
        lambda: neffld.plan(absent),
        lambda: neffld.plan(tmp_path / "absent.toml"),
        lambda: neffld.plan_argv([str(absent)]),
    ):
        err = raises(call)
        assert (err.stage, err.status, err.status_name) == ("io", 1, "NRT_FAILURE")
        assert "absent" in err.message


def test_a_file_that_cannot_be_read_is_also_the_oserror_of_its_cause(tmp_path):
    import errno
    import os

    absent = tmp_path / "absent.neff"
    for call in (
        lambda: neffld.inspect(absent),
        lambda: neffld.verify(str(absent)),
        lambda: neffld.load(absent),
        lambda: neffld.compare(SMALL, tmp_path / "absent.ntff"),
        lambda: neffld.plan(absent),
        lambda: neffld.plan(tmp_path / "absent.toml"),
        lambda: neffld.plan_argv([str(absent)]),
    ):
        with pytest.raises(FileNotFoundError) as e:
            call()
        err = e.value
        assert isinstance(err, neffld.NeffFileNotFoundError) and isinstance(err, neffld.NeffError)
        assert (err.errno, err.stage, err.status, err.status_name) == (errno.ENOENT, "io", 1, "NRT_FAILURE")
        assert err.filename.endswith("absent.neff") or err.filename.endswith("absent.ntff") \
            or err.filename.endswith("absent.toml")
        assert str(err) == err.message and "absent" in str(err)  # as NeffError prints
    # A directory is an OSError of its own cause.
    with pytest.raises(neffld.NeffOSError) as e:
        neffld.load(tmp_path)
    assert e.value.errno == errno.EISDIR and not isinstance(e.value, FileNotFoundError)
    # Unreadable: as a user without the right (root reads anything).
    secret = tmp_path / "secret.neff"
    secret.write_bytes(SMALL.read_bytes())
    secret.chmod(0)
    code = (
        "import errno, sys, neffld\n"
        "try:\n    neffld.inspect(sys.argv[1])\n"
        "except PermissionError as e:\n"
        "    assert isinstance(e, neffld.NeffPermissionError) and e.errno == errno.EACCES, e\n"
        "    print(e.stage, e.status_name, e.filename == sys.argv[1])\n"
    )
    import subprocess
    import sys

    # Root reads anything: the check runs without the capabilities that
    # let it (util-linux's setpriv).
    caps = "-dac_override,-dac_read_search"
    drop = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"] if os.geteuid() == 0 else []
    out = subprocess.run([*drop, sys.executable, "-c", code, str(secret)], capture_output=True,
                         text=True)
    assert out.stdout == "io NRT_FAILURE True\n", out.stderr


def test_the_stub_names_every_stage_a_neff_error_has(small_bytes, monkeypatch, tmp_path):
    import ast
    from pathlib import Path

    stub = ast.parse(Path(neffld.__file__).with_name("__init__.pyi").read_text())
    cls = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "NeffError")
    at = next(i for i, n in enumerate(cls.body) if isinstance(n, ast.AnnAssign) and n.target.id == "stage")
    doc = cls.body[at + 1].value.value
    seen = {
        raises(neffld.load, SMALL, arch="trn9").stage,
        raises(neffld.load, tmp_path / "absent.neff").stage,
        raises(neffld.inspect, b"\0" * 16).stage,
        raises(neffld.load, SMALL, start_core=1000).stage,
        raises(neffld.load, SMALL, arch="trn3").stage,
        raises(neffld.compare, SMALL, b"\0" * 16).stage,
    }
    monkeypatch.setenv("NEFFLD_ARCH", "trn9")
    seen.add(raises(neffld.verify, SMALL).stage)
    assert seen == {"usage", "io", "container", "guard", "parse", "capture", "config"}
    for stage in seen:
        assert f'"{stage}"' in doc, stage


def test_a_logical_core_index_out_of_range_is_nrt_invalid():
    err = raises(neffld.load, SMALL, start_core=1000)
    assert (err.status, err.stage) == (2, "guard")


def test_a_truncated_payload_does_not_inflate(small_bytes):
    data = bytearray(small_bytes)
    data[PAYLOAD + 64 :] = b"\0" * (len(data) - PAYLOAD - 64)
    err = raises(neffld.inspect, bytes(data))
    # "failure while reading NEFF metadata" -> NRT_INVALID (parse.md §15 row 15).
    assert (err.stage, err.status) == ("container", 2)
    assert "failure while reading NEFF metadata" in err.message


def test_neff_error_is_one_class_for_every_failure():
    assert issubclass(neffld.NeffError, Exception)
    for bad in (b"", b"x" * 2000, LARGE.read_bytes()[:5000]):
        with pytest.raises(neffld.NeffError):
            neffld.inspect(bad)


def test_the_runtimes_environment_applies(monkeypatch):
    # A NEFF compiled with --lnc=2 on a runtime configured for LNC 1: the LNC
    # gate (parse.md gate 1d) refuses it with NRT_INVALID.
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    err = raises(neffld.load, SMALL)
    assert (err.status, err.stage) == (2, "container")
    assert "NEURON_LOGICAL_NC_CONFIG" in err.message


def test_an_architecture_named_by_the_environment_is_the_instances(monkeypatch):
    # NEFFLD_ARCH names the instance's architecture for load and verify
    # alike, as for the command's load, verify and plan: a trn2 NEFF on a
    # trn3 instance meets the runtime's arch gate (parse.md §3), naming
    # both architectures by their ids, unless legacy NEFFs are allowed.
    monkeypatch.setenv("NEFFLD_ARCH", "trn3")
    err = raises(neffld.load, SMALL)
    assert (err.status, err.stage) == (2, "parse")
    assert "NEFF arch: v3, instance arch: v4" in err.message
    report = neffld.verify(SMALL)
    assert not report.ok and report.status == 2
    assert [(p.stage, p.message) for p in report.problems] == [(err.stage, err.message)]
    # On trn1 the header's logical-core size 2 is refused first, by both.
    monkeypatch.setenv("NEFFLD_ARCH", "trn1")
    err = raises(neffld.load, SMALL)
    assert (err.status, err.stage) == (2, "container")
    assert "which trn1 cannot take (it takes logical-core size 1)" in err.message
    assert [p.message for p in neffld.verify(SMALL).problems] == [err.message]
    # Allowed, the trn2 NEFF loads on the trn3 device; an argument still
    # beats the variable.
    monkeypatch.setenv("NEFFLD_ARCH", "trn3")
    monkeypatch.setenv("NEURON_RT_ALLOW_LEGACY_NEFF", "1")
    assert neffld.verify(SMALL).ok
    with neffld.load(SMALL, device="null") as m:
        assert m.arch == "trn3"
    monkeypatch.delenv("NEURON_RT_ALLOW_LEGACY_NEFF")
    with neffld.load(SMALL, arch="trn2", device="null") as m:
        assert m.arch == "trn2"


def test_a_variable_verify_cannot_read_raises(monkeypatch):
    monkeypatch.setenv("NEFFLD_ARCH", "trn9")
    err = raises(neffld.verify, SMALL)
    assert (err.status, err.stage) == (2, "config")
    assert "NEFFLD_ARCH" in err.message


def test_names_from_the_neff_are_escaped_in_the_text_and_exact_in_message(small_bytes, monkeypatch):
    # The LNC gate names the model: a forged header name must not forge a
    # line or repaint a terminal when the exception is printed.
    data = bytearray(small_bytes)
    data[NAME] = b"evil\nstatus ok\x1b[32m".ljust(256, b"\0")
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    err = raises(neffld.load, bytes(data))
    assert "evil\nstatus ok\x1b[32m" in err.message
    assert "evil\\nstatus ok\\x1b[32m" in str(err)
    assert not any(c in str(err) for c in "\n\x1b")


def test_a_stream_is_read_only_as_far_as_its_header_says(tmp_path):
    # A FIFO fed zeros by another process (the call holds the GIL): the
    # header's gates fail after its 1024 bytes, long before the feeder runs
    # out of what it offers.
    import os
    import subprocess
    import sys

    fifo = tmp_path / "zeros"
    os.mkfifo(fifo)
    offered = 256 << 20
    feeder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys\n"
            "n = 0\n"
            "try:\n"
            "    with open(sys.argv[1], 'wb') as w:\n"
            "        while n < int(sys.argv[2]):\n"
            "            w.write(bytes(1 << 20)); n += 1 << 20\n"
            "except BrokenPipeError:\n"
            "    pass\n"
            "print(n)\n"
        ), str(fifo), str(offered)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    err = raises(neffld.inspect, fifo)
    sent = int(feeder.communicate(timeout=60)[0])
    assert err.status == 10 and "packager" in err.message
    assert sent < offered


def test_a_usage_error_keeps_its_lines_and_prints_as_the_command_does():
    # The command's parser wrote it from the caller's words: its line
    # breaks are real ones in str(e) (they used to be a literal "\n"), and
    # it reads as `neffld plan` prints it, without a stage or status.
    err = raises(neffld.plan_argv, ["--frobnicate"])
    assert (err.stage, err.status_name) == ("usage", "NRT_INVALID")
    assert "\n" in err.message and "\\n" not in str(err)
    assert str(err) == err.message
    assert any(l.startswith("Usage: neffld plan") for l in str(err).splitlines())
    # A control character of the caller's own word is still escaped (a
    # carriage return would overwrite the line on a terminal).
    err = raises(neffld.plan_argv, ["--frob\rnothing wrong"])
    assert "\r" in err.message and "\r" not in str(err)
    assert "--frob\\rnothing wrong" in str(err) and len(str(err).splitlines()) > 1


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["neffld", "plan", "x.neff", "--help"]])
def test_plan_argv_does_not_take_the_commands_help(argv):
    # plan_argv returns a Plan; help is not one, nor a failed parse: the
    # error says where the help is, rather than holding it.
    err = raises(neffld.plan_argv, argv)
    assert (err.stage, err.status_name) == ("usage", "NRT_INVALID")
    assert "`neffld plan --help`" in err.message
    assert "Arguments:" not in err.message and "\n" not in str(err)


def test_a_file_named_like_the_help_flag_is_a_file():
    err = raises(neffld.plan_argv, ["--", "-h"])
    assert err.stage == "io" and "cannot read -h" in err.message


HINT = "these bytes were read as a NEFF's contents; to name a file, pass a str or a pathlib.Path"


def test_bytes_that_name_a_file_are_still_contents_with_a_hint(tmp_path, monkeypatch):
    # Bytes are a NEFF's contents, as documented; a short buffer that names
    # an existing file says so, since the caller most likely meant the file.
    path = str(SMALL).encode()
    for fn in (neffld.inspect, neffld.load):
        for given in (path, bytearray(path), memoryview(path)):
            err = raises(fn, given)
            assert (err.stage, err.status) == ("container", 2)
            assert "not a NEFF" in err.message and HINT in err.message
            assert str(SMALL) in err.message
    report = neffld.verify(path)
    assert not report.ok and HINT in report.problems[0].message
    ntff = min((SMALL.parents[1] / "captures").glob("*.ntff"))
    err = raises(neffld.compare, path, ntff)
    assert err.stage == "container" and HINT in err.message
    # A capture's bytes alike.
    err = raises(neffld.compare, SMALL, str(ntff).encode())
    assert err.stage == "capture"
    assert "these bytes were read as a capture's contents" in err.message
    # A relative path names a file from the working directory.
    monkeypatch.chdir(SMALL.parent)
    assert HINT in raises(neffld.inspect, SMALL.name.encode()).message
    # No hint for bytes that name nothing, nor for a NEFF's own bytes.
    assert "pathlib" not in raises(neffld.inspect, str(tmp_path / "absent.neff").encode()).message
    data = bytearray(SMALL.read_bytes())
    struct.pack_into("<Q", data, VERSION_MAJOR, 3)
    assert "pathlib" not in raises(neffld.inspect, bytes(data)).message


def test_load_names_its_core_start_core_only():
    # One way to say it: nrtpy's core_id is neffld.nrtpy's, and load says so.
    with pytest.raises(TypeError, match="start_core .*core_id is nrtpy's"):
        neffld.load(SMALL, core_id=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'cores'"):
        neffld.load(SMALL, cores=0)


def test_a_neff_of_another_chip_gets_the_advice_the_plan_gives(monkeypatch):
    """A trn2 NEFF (LNC 2) loaded or verified on trn1 is to be recompiled
    for trn1 (`neuronx-cc --target=trn1`), as the plan says; it was told
    `--lnc=1`, which still builds for trn2."""
    trn2 = FIXTURES / "kfusion__fused_attention__fused.neff"
    flag = "`neuronx-cc --target=trn1`"
    err = raises(neffld.load, trn2, arch="trn1")
    assert f"recompile it for trn1 with {flag}" in err.message and "--lnc" not in err.message
    monkeypatch.setenv("NEFFLD_ARCH", "trn1")
    report = neffld.verify(trn2)
    assert not report.ok
    assert any(flag in p.message and "--lnc" not in p.message for p in report.problems), report.problems
    monkeypatch.delenv("NEFFLD_ARCH")
    step = neffld.plan(f"{trn2}@0", instance="trn1.32xlarge").steps[0]
    assert f"of trn1.32xlarge with {flag}" in step.error.message
