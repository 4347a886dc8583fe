"""utils/parse_options.sh keeps Kaldi's semantics."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
stage=0
some_opt=a
use_gpu=false
help_message="Usage: demo [options] ARG"
. {root}/utils/parse_options.sh
echo "stage=$stage some_opt=$some_opt use_gpu=$use_gpu rest=$*"
"""


def run(tmp_path, *args):
    s = tmp_path / "demo.sh"
    s.write_text(SCRIPT.format(root=ROOT))
    return subprocess.run(["bash", str(s), *args], capture_output=True, text=True)


def test_sets_variables_and_keeps_positionals(tmp_path):
    r = run(tmp_path, "--stage", "3", "--some-opt=x y", "--use-gpu", "true", "pos1", "--not-parsed")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "stage=3 some_opt=x y use_gpu=true rest=pos1 --not-parsed"


def test_unknown_option_fails(tmp_path):
    r = run(tmp_path, "--nope", "1")
    assert r.returncode == 1 and "invalid option --nope" in r.stderr


def test_boolean_checked(tmp_path):
    r = run(tmp_path, "--use-gpu", "yes")
    assert r.returncode == 1 and "expects true or false" in r.stderr


def test_help_and_config(tmp_path):
    r = run(tmp_path, "--help")
    assert r.returncode == 0 and r.stdout.strip() == "Usage: demo [options] ARG"
    conf = tmp_path / "c.conf"
    conf.write_text("stage=7\n")
    r = run(tmp_path, "--config", str(conf), "--some-opt", "b")
    assert r.stdout.strip() == "stage=7 some_opt=b use_gpu=false rest="


def test_recipe_numbers_and_config_checked_before_any_stage(tmp_path):
    recipe = ROOT / "recipes" / "iwslt"
    for args, says in ((["--stage", "x"], "--stage must be a whole number, got 'x'"),
                       (["--stop-stage", "-1"], "--stop-stage must be a whole number, got '-1'"),
                       (["--nj", "2a"], "--nj must be a whole number"),
                       (["--stage", "4", "--stop-stage", "4", "--train-config", str(tmp_path / "none.yaml"),
                         "--expdir", str(tmp_path / "exp")], "none.yaml: no such file")):
        r = subprocess.run(["./run.sh", *args], cwd=recipe, capture_output=True, text=True)
        assert r.returncode == 1 and says in r.stderr and "stage" not in r.stdout, (args, r.stderr)
    assert not (tmp_path / "exp").exists()


def test_benchmark_scripts_check_their_numbers():
    for script, args, says in (("bench_punctuate.sh", ["--repeat", "x", "m.pkt"],
                                "--repeat must be a whole number >= 1"),
                               ("bench_punctuate.sh", ["--threads", "-1", "m.pkt"], "--threads must be a whole number"),
                               ("bench_serve.sh", ["--requests", "1e3", "m.pkt", "t.txt"],
                                "--requests must be a whole number")):
        r = subprocess.run(["bash", str(ROOT / "utils" / script), *args], capture_output=True, text=True)
        assert r.returncode == 1 and r.stderr.strip().endswith(f"got '{args[1]}'") and says in r.stderr, r.stderr


def test_bench_punctuate_names_the_cpu_and_its_vector_flags(tmp_path):
    """Timings are recorded with the CPU they ran on (machines differ: int8 and bf16 help only where
    the CPU has vnni / bf16 / amx)."""
    words = tmp_path / "words.txt"
    words.write_text("so what do you think nasa will do next i think they will go to mars\n" * 3)
    out = tmp_path / "bench.tsv"
    model = ROOT / "punctkit" / "pretrained" / "fast.pkt"
    r = subprocess.run(["bash", str(ROOT / "utils" / "bench_punctuate.sh"), "--repeat", "1", "--threads", "1",
                        "--text", str(words), "--out", str(out), str(model)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("# cpu: ") and "flags:" in first
    cpu_flags = set(next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                         if line.startswith("flags")).split(":", 1)[1].split())
    named = first.split("flags:", 1)[1].split()
    assert set(named) <= cpu_flags and ("avx2" in named) == ("avx2" in cpu_flags)
    lines = out.read_text().splitlines()
    assert lines[0] == first and lines[1].split("\t")[0] == str(model) and float(lines[1].split("\t")[3]) > 0
