"""The CUDA/NCCL block lands in the sitecustomize.py the server's interpreter really imports, and a child spawned
the way SGLang starts its schedulers sees the variables (field case C13).

Real ansible-playbook on localhost: the facts role (host_facts probes a real venv interpreter) and the cuda_env role,
with every path of the role under a temporary directory.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture
def tree(tmp_path):
    """A venv (no pip), a CUDA toolkit stand-in (bin/nvcc, bin/ptxas) and a PYTHONPATH directory."""
    venv = tmp_path / "ml-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    cuda = tmp_path / "cuda-13.0"
    (cuda / "bin").mkdir(parents=True)
    for tool in ("nvcc", "ptxas"):
        (cuda / "bin" / tool).write_text("#!/bin/sh\n")
        (cuda / "bin" / tool).chmod(0o755)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "sitecustomize.py").write_text("# the team's own start-up patches\nPATCHED = True\n")
    return {"tmp": tmp_path, "python": str(venv / "bin" / "python3"), "cuda": str(cuda), "patches": str(patches)}


def play(tmp, extra_vars, facts=None):
    """Run facts (unless ``facts`` is given) then cuda_env on localhost; return (rc, output)."""
    book = tmp / "play.yml"
    tasks = [] if facts else [{"name": "Facts", "ansible.builtin.import_role": {"name": "inferops.sglang.facts"}}]
    tasks.append({"name": "CUDA env", "ansible.builtin.import_role": {"name": "inferops.sglang.cuda_env"},
                  "vars": {"cuda_env_host_facts": facts or "{{ ansible_facts['inferops_sglang'] }}"}})
    book.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    (tmp / "vars.json").write_text(json.dumps(extra_vars))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", "@%s" % (tmp / "vars.json"), str(book)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable))
    return proc.returncode, proc.stdout


def spawned_child_sees(python, name, pythonpath=None):
    """The value of ``name`` in a multiprocessing-spawn child of ``python`` started from a clean environment."""
    code = textwrap.dedent("""
        import multiprocessing, sys
        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            p = ctx.Process(target=exec, args=("import os; print(os.environ.get(%r))",))
            p.start(); p.join()
    """) % name
    env = {"PATH": "/usr/bin:/bin"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([python, "-c", code], env=env, stdout=subprocess.PIPE, text=True, check=True).stdout.strip()


def test_the_block_goes_into_the_sitecustomize_on_the_servers_pythonpath(tree):
    """C13 variant: PYTHONPATH=/opt/patches holds a sitecustomize.py that shadows the distribution's; the facts probe
    the interpreter with it, the block is written there (the team's lines kept) and a spawned child sees it."""
    rc, out = play(tree["tmp"], {
        "facts_python": tree["python"], "facts_pythonpath": tree["patches"], "facts_nvidia_smi": "/nonexistent",
        "cuda_env_cuda_home": tree["cuda"], "cuda_env_env_file": str(tree["tmp"] / "etc" / "cuda.env"),
        "cuda_env_nccl": {"NCCL_PROTO": "LL"}})
    assert rc == 0, out[-3000:]
    text = open(os.path.join(tree["patches"], "sitecustomize.py")).read()
    assert "BEGIN inferops.sglang managed block" in text and "PATCHED = True" in text
    assert spawned_child_sees(tree["python"], "CUDA_HOME", tree["patches"]) == tree["cuda"]
    assert spawned_child_sees(tree["python"], "NCCL_PROTO", tree["patches"]) == "LL"
    assert "PYTHONPATH %s from parameter" % tree["patches"] in out


def test_a_new_sitecustomize_is_a_file_and_a_child_that_misses_it_fails_the_run(tree):
    """C13: an interpreter that imports no sitecustomize gets a candidate path that already ends in
    /sitecustomize.py; the role once appended it again and created a directory. Here the system's own
    sitecustomize.py comes first on sys.path, so the new file is not imported: the spawn check must say so."""
    site = subprocess.run([tree["python"], "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    candidate = os.path.join(site, "sitecustomize.py")
    facts = {"init": {"system": "other"}, "interconnect": "none",
             "python": {"executable": tree["python"], "pythonpath": None,
                        "sitecustomize": {"imported": False, "path": None, "realpath": None, "candidate": candidate}}}
    rc, out = play(tree["tmp"], {"cuda_env_cuda_home": tree["cuda"],
                                 "cuda_env_env_file": str(tree["tmp"] / "etc" / "cuda.env")}, facts=facts)
    assert os.path.isfile(candidate), "the block must go into a file named sitecustomize.py: " + out[-3000:]
    assert not os.path.exists(os.path.join(candidate, "sitecustomize.py"))
    if spawned_child_sees(tree["python"], "CUDA_HOME") == tree["cuda"]:
        assert rc == 0, out[-3000:]  # an interpreter that really imports no sitecustomize of its own
    else:
        assert rc != 0
        assert "does not see CUDA_HOME" in out and "does not import this file" in out, out[-3000:]


def test_c49_a_sitecustomize_with_a_syntax_error_is_refused_naming_file_and_line(tree):
    """C49: the sitecustomize.py the interpreter imports (on the server's PYTHONPATH) has a syntax error at line 18:
    the pre-flight refuses, naming that file and line; nothing is written (the file as it was, no environment file)."""
    broken = os.path.join(tree["patches"], "sitecustomize.py")
    text = "# the team's own start-up patches\n" + "import os\n" * 16 + "if True print('x')\n"
    with open(broken, "w") as f:
        f.write(text)
    rc, out = play(tree["tmp"], {
        "facts_python": tree["python"], "facts_pythonpath": tree["patches"], "facts_nvidia_smi": "/nonexistent",
        "cuda_env_cuda_home": tree["cuda"], "cuda_env_env_file": str(tree["tmp"] / "etc" / "cuda.env")})
    assert rc != 0
    assert "Refuse a sitecustomize.py the server's interpreter cannot import" in out
    assert "%s line 18: SyntaxError" % broken in out, out[-3000:]
    assert open(broken).read() == text
    assert not os.path.exists(str(tree["tmp"] / "etc" / "cuda.env"))
