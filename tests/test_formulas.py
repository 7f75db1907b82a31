"""The formulas: compiled == symbolic, sums of named terms, and attention against brute force."""

from __future__ import annotations

import itertools
import subprocess
import sys
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import calc
from calc import _compiled
from calc.evaluate import count_flops, count_params, symbol_values
from calc.formulas import GROUPS, codegen, flops, params
from calc.symbols import SYMBOLS
from tests.draws import examples
from tests.strategies import model_specs


def test_compiled_module_is_fresh():
    """calc/_compiled.py is generated; regenerate with `python -m calc.formulas.codegen`."""
    assert codegen.TARGET.read_text() == codegen.source()


def test_unevaluated_extrema_are_what_sympy_makes_of_them():
    """A Max or Min built with evaluate=False (sympy cannot order its sides, and trying costs a
    good part of a second at import) is exactly the one sympy's own evaluation gives."""
    extrema = {m for group in GROUPS.values() for expr in group.values()
               for m in expr.atoms(sympy.Max, sympy.Min)}
    assert len(extrema) >= 3
    for extremum in extrema:
        assert type(extremum)(*extremum.args) == extremum, extremum


def test_compiled_lines_are_the_one_line_forms():
    """calc/_compiled.py breaks a long expression one term per line, inside brackets only, so
    that its diffs can be read: each compiles to the very operations of its one-line form (the
    same exact integer arithmetic, no slower), and every line fits in 100 columns."""

    def code(source: str) -> tuple:
        compiled = compile(source, "<compiled>", "exec")
        return compiled.co_code, compiled.co_consts, compiled.co_names

    broken = 0
    for exprs in GROUPS.values():
        terms, values = codegen.expressions(exprs)
        for term, text in terms:
            lines = codegen._lines(text, codegen.INDENT, f"{term} = ")
            assert code("if s:\n" + "\n".join(lines)) == code(f"if s:\n    {term} = {text}")
            broken += len(lines) > 1
        for key, text in values.items():
            lines = codegen._lines(text, 2 * codegen.INDENT, f"{key!r}: ", ",")
            assert code("x = {\n" + "\n".join(lines) + "\n}") == code(f"x = {{{key!r}: {text}}}")
            broken += len(lines) > 1
    assert broken > 50  # the long ones were broken
    assert max(map(len, codegen.TARGET.read_text().splitlines())) < 100


@pytest.mark.parametrize("group", ["params_per_layer", "params_dense_ffn", "params_moe_ffn",
                                   "params_mamba", "params_deltanet", "params_short_conv",
                                   "params_components", "params_summary",
                                   "flops_forward_components", "flops"])
def test_integer_formulas_print_no_division(group):
    """Counts stay exact Python integers for any size: no '/' may reach the compiled code (a
    chunk count ⌊T/c⌋ compiles to integer division, _floordiv)."""
    for expr in GROUPS[group].values():
        assert "/" not in codegen.python(expr)


def _symbolic(expr: sympy.Expr, values: dict[str, int]) -> int:
    # xreplace substitutes all symbols at once (no simplification between): same numbers as
    # subs, about 50× faster
    return int(expr.xreplace({SYMBOLS[k]: sympy.Integer(v) for k, v in values.items()}))


@settings(max_examples=examples(60), deadline=None)
@given(spec=model_specs(), seq_len=st.integers(1, 40), causal=st.sampled_from([0, 1]))
def test_compiled_equals_sympy_substitution(spec, seq_len, causal):
    """An independent numeric route: sympy's own `subs` on the same expressions."""
    values = {**symbol_values(spec), "T": seq_len, "i_causal": causal}
    for name in ("params_components", "params_summary", "flops_forward_components", "flops"):
        compiled = getattr(_compiled, name)(values)
        for key, expr in GROUPS[name].items():
            assert compiled[key] == _symbolic(expr, values), (name, key)


@settings(max_examples=examples(100), deadline=None)
@given(spec=model_specs())
def test_totals_are_sums_of_named_terms(spec):
    c = count_params(spec)
    assert c.total == sum(c.components.values())
    assert c.embedding == (c.components["embedding/token"] + c.components["embedding/position"]
                           + c.components["embedding/segment"]
                           + c.components["per_layer_embeddings/table"])
    assert c.non_embedding == c.total - c.embedding - c.components["lm_head"]
    assert c.active <= c.total
    # every FFN expert a token: top_k of E, none of the zero-computation experts on average
    every_expert_runs = spec.moe is None or spec.moe.experts_per_token == spec.moe.n_experts
    att = spec.attention
    if att.experts is not None:  # JetMoE's mixture of heads: h / h_kv of its experts per token
        every_expert_runs = every_expert_runs and att.n_heads // att.n_kv_heads == att.experts
    if every_expert_runs:
        assert c.active == c.total


def _brute_force_scores(spec: calc.ModelSpec, seq_len: int, causal: bool) -> int:
    """QKᵀ and A·V over the attention layers, counted one query at a time: at most w keys in a
    sliding-window layer, those of its own chunk in a chunked one, the indexer's top-k in a DSA
    layer; each pair costs 2·d_qk and 2·d_v per head of its layer's shape (attention.
    kind_shapes), + 2·d_qk for relative positions (Transformer-XL: (q + v)·W_R r); under
    differential attention each map weighs values 2·d_v wide (DIFF Transformer). A looped
    layer (calc.spec.loop) scores once per pass: the stored layers' kinds in the order they
    run."""
    total = 0
    indexer = spec.attention.indexer
    order = spec.loop.order() if spec.loop is not None else range(spec.n_layers)
    for kind in (spec.attention_kinds[i] for i in order):
        pairs = 0
        window = spec.attention.sliding_window if kind == "local" else None
        # DSA's top-k on the global layers; dots3's local layers have no indexer
        window = indexer.topk if indexer and kind == "global" else window
        chunk = spec.attention.chunk_size if kind == "chunked" else None
        for i in range(1, seq_len + 1):
            if chunk:  # keys from the chunk's first token to i (causal) or to its last (full)
                start = (i - 1) // chunk * chunk + 1
                pairs += i - start + 1 if causal else min(start + chunk - 1, seq_len) - start + 1
            elif kind:  # '' marks a layer without attention
                seen = i if causal else seq_len
                pairs += min(seen, window) if window else seen
        heads, _, d_qk, d_v = spec.heads_of(kind)
        relative = d_qk if spec.position.kind == "relative" else 0
        values = 2 * d_v if spec.attention.differential else d_v
        total += 2 * heads * (d_qk + values + relative) * pairs
    return total


@settings(max_examples=examples(150), deadline=None)
@given(spec=model_specs(), seq_len=st.integers(1, 60), causal=st.booleans())
def test_attention_scores_against_brute_force(spec, seq_len, causal):
    """QKᵀ costs 2·d_qk and A·V 2·d_v per head per (query, key) pair (calc.formulas.flops)."""
    flops_ = count_flops(spec, seq_len, "causal" if causal else "full")
    # DSA's indexer: q·k over d_I and the head weights' sum, per head, over every key it sees
    indexer, seen = spec.attention.indexer, seq_len * (seq_len + 1) // 2 if causal \
        else seq_len * seq_len
    selecting = (2 * indexer.n_heads * (indexer.head_dim + 1) * seen * spec.n_indexer_layers
                 if indexer else 0)
    assert flops_.attention_per_sequence == (_brute_force_scores(spec, seq_len, causal)
                                             + selecting)


@settings(max_examples=examples(100), deadline=None)
@given(spec=model_specs(), seq_len=st.integers(1, 60))
def test_flop_conventions(spec, seq_len):
    causal = count_flops(spec, seq_len, "causal")
    full = count_flops(spec, seq_len, "full")
    assert causal.forward <= full.forward
    assert causal.backward == 2 * causal.forward and causal.train == 3 * causal.forward
    weights = sum(v for k, v in full.components.items() if k != "attention/scores")
    exact = Fraction(weights * seq_len + full.attention_per_sequence, seq_len)
    # an int when T divides the per-sequence count (chunked layers' need not), else the float
    # nearest to it
    assert full.forward == (exact.numerator if exact.denominator == 1 else float(exact))
    # one generated token at context T sees what the last query of a full sequence sees
    assert causal.inference_per_token >= weights


def test_gqa_does_not_reduce_score_flops():
    mha = calc.load_preset("llama2-70b").spec
    mqa = mha.updated(**{"attention.n_kv_heads": 1})
    a, b = count_flops(mha, 4096), count_flops(mqa, 4096)
    assert a.components["attention/scores"] == b.components["attention/scores"]
    assert a.components["attention/kv"] == 8 * b.components["attention/kv"]


def test_sliding_window_caps_keys():
    """Mistral 7B: every layer local with w = 4096; beyond T = w, each query sees 4096 keys."""
    spec = calc.load_preset("mistral-7b").spec
    at_w = count_flops(spec, 4096, "full").attention_per_sequence // 4096
    beyond = count_flops(spec, 32768, "full").attention_per_sequence // 32768
    assert at_w == beyond == 2 * 32 * 32 * (128 + 128) * 4096
    inference = count_flops(spec, 32768).inference_per_token
    assert inference == count_flops(spec, 4096).inference_per_token


def test_mla_attention_widths():
    """DeepSeek-V3 scores with d_qk = 128 + 64 and weighs values with d_v = 128 per head."""
    spec = calc.load_preset("deepseek-v3").spec
    assert (spec.head_dim_qk, spec.head_dim_v) == (192, 128)
    full = count_flops(spec, 4096, "full").components["attention/scores"]
    assert full == 2 * 61 * 128 * (192 + 128) * 4096


def test_huge_specs_stay_exact():
    """A 10T-parameter spec: Python integers, no overflow; the most tokens calc accepts (1e18,
    calc.numbers.RANGES) stays finite, and more is refused rather than printed."""
    spec = calc.ModelSpec(vocab_size=256_000, d_model=65_536, n_layers=200,
                          context_length=8192, attention={"n_heads": 512, "n_kv_heads": 8},
                          ffn={"activation": "swiglu", "d_ff": 262_144},
                          norm={"kind": "rmsnorm"}, position={"kind": "rope"})
    c = count_params(spec)
    assert isinstance(c.total, int) and c.total > 1e13
    per_layer = 2 * 65_536**2 + 2 * 65_536 * 8 * 128 + 3 * 65_536 * 262_144 + 2 * 65_536
    assert c.total == 200 * per_layer + 2 * 256_000 * 65_536 + 65_536
    report = calc.estimate(spec, tokens=1e18, gpu="h100")
    assert 1e31 < report.training.flops < float("inf")
    assert report.training.gpu_hours < float("inf")
    with pytest.raises(calc.CalcError, match=r"tokens: 1e\+30 is outside"):
        calc.estimate(spec, tokens=1e30, gpu="h100")


def test_formula_sources_cover_every_term():
    """Every compiled name is a named term of one formula dict (no anonymous sums)."""
    parts = {key for _, part in params.PARTS for key in part}
    assert set(params.COMPONENTS) == {*parts, *params.MOE_FFN, *params.SHARED_BLOCK,
                                       *params.PER_LAYER_EMBEDDINGS, *params.ALTUP_LAUREL,
                                       *params.ONCE, *params.COMPRESSION}
    assert set(params.PER_LAYER) == {*params.ATTENTION, *params.NORMS}
    assert "attention/scores" not in flops.FORWARD_PER_TOKEN  # added per sequence, ÷ T


def test_deepseek_v3_mtp_module_is_counted_apart():
    """DeepSeek-V3 §2.2: one MTP module = 2 input norms + M_k (d × 2d) + one MoE block + the
    shared head's norm; the embedding and output head are shared. The 671B excludes it."""
    spec = calc.load_preset("deepseek-v3").spec
    c = count_params(spec)
    block = sum(c.per_layer.values()) + sum(c.per_moe_ffn.values())
    assert c.mtp == 2 * 7168 * 7168 + 3 * 7168 + block
    assert c.total == 671_026_419_200
    assert count_params(spec.updated(mtp_modules=0)).total == c.total


def test_layer_counts_equal_the_per_layer_definitions():
    """n_moe_layers and n_local_layers are counted in closed form; they must equal the per-layer
    tuples they summarise for every depth, dense prefix, MoE period and window pattern."""
    moe_spec = calc.load_preset("deepseek-v3").spec
    for n, first, every in itertools.product(range(1, 25), range(0, 6), range(1, 5)):
        moe = moe_spec.moe.model_copy(update={"first_dense_layers": first, "every": every})
        spec = moe_spec.model_copy(update={"n_layers": n, "moe": moe})
        assert spec.n_moe_layers == sum(spec.moe_layers)
    window_spec = calc.load_preset("mistral-7b").spec
    patterns = [None, ("local", "global"), ("global", "local", "local"), ("global",)]
    for n, pattern in itertools.product(range(1, 25), patterns):
        attention = window_spec.attention.model_copy(update={"layer_pattern": pattern})
        spec = window_spec.model_copy(update={"n_layers": n, "attention": attention})
        assert spec.n_local_layers == spec.layer_kinds.count("local")


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3", "smollm3-3b"])
def test_specialised_formulas_are_what_subs_makes(name):
    """calc.formulas.specialise puts a model's structure in with one memoised walk, the shared sums
    factored and the shared terms printed once: the totals are those of expr.subs(structure)
    (sympy's order, one symbol after another: Mixtral's L_dense = L − L_moe, then L_moe = L)
    and factor_terms, and every formula's text and LaTeX are str's and latex's."""
    from calc.formulas.specialise import structure
    from calc.reports.formulas import formulas_for
    from calc.symbols import LATEX_NAMES

    spec = calc.load_preset(name).spec
    subs = structure(spec)
    special = formulas_for(spec)
    for key in ("total", "active"):
        made = sympy.factor_terms(sympy.expand(params.SUMMARY[key].subs(subs)))
        assert special[f"params {key}"] == made, key
    formulas = calc.model_formulas(spec)
    for key, expr in special.items():
        assert formulas[key].text == str(expr)
        assert formulas[key].latex == sympy.latex(expr, symbol_names=LATEX_NAMES)


def test_memory_formulas_are_what_factor_terms_makes():
    """The memory formulas of one model, made with the shared sums factored once, against
    factor_terms on each formula on its own; their text and LaTeX against str and latex."""
    from calc.formulas import COMMAND_GROUPS
    from calc.formulas.specialise import _at_once, _put_in, structure
    from calc.reports.formulas import command_formulas
    from calc.symbols import LATEX_NAMES

    spec = calc.load_preset("mixtral-8x7b").spec
    shown = command_formulas("memory", spec)
    subs, made = _at_once(structure(spec)), {}
    for group in COMMAND_GROUPS["memory"]:
        for key, expr in GROUPS[group].items():
            alone = sympy.factor_terms(expr.xreplace(subs))
            assert _put_in(expr, subs, made) == expr.xreplace(subs)
            if alone != 0:
                formula = shown[f"{group} {key}"]
                assert formula.expr == alone, key
                assert formula.text == str(alone)
                assert formula.latex == sympy.latex(alone, symbol_names=LATEX_NAMES)


def test_memory_formulas_build_only_the_modules_they_show():
    """calc.formulas.GROUPS builds a module when one of its groups is first read, and
    finetune.FLOPS (a sympy.cancel) when it is first read: `memory --formula` builds the memory,
    fine-tuning, precision and offload groups and what they import, none of the others."""
    code = "\n".join([
        "import sys",
        "import calc.formulas",
        "assert [m for m in sys.modules if m.startswith('calc.formulas.')] == [], 'eager'",
        "from calc.reports.formulas import command_formulas",
        "command_formulas('memory', 'gpt3-175b')",
        "from calc.formulas import finetune",
        "assert 'FLOPS' not in vars(finetune), 'FLOPS built'",
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('calc.formulas.'))))",
    ])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    built = {name.removeprefix("calc.formulas.") for name in out}
    assert built == {"specialise", "params", "mixers", "flops", "memory", "finetune",
                     "precision", "offload"}


def test_finetune_flops_made_on_first_read():
    from calc.formulas import finetune

    assert set(finetune.FLOPS) == {"adapter_forward_per_token", "train_per_sequence"}
    assert finetune.POSITION_SCORES_PER_SEQUENCE.has(SYMBOLS["i_rel"])
    with pytest.raises(AttributeError, match="no attribute 'FLOPZ'"):
        finetune.FLOPZ  # noqa: B018


def test_shared_sums_leave_sympy_as_it_was():
    """specialise keeps factor_terms's helpers' results within its block alone, and puts
    sympy's own functions back when the block ends, by an error too."""
    from sympy.core import exprtools

    from calc.formulas.specialise import _shared_sums

    def sympy_functions() -> list:
        return [exprtools.gcd_terms, *(vars(kind)["as_content_primitive"]
                                       for kind in (sympy.Add, sympy.Mul, sympy.Pow))]

    before = sympy_functions()
    x, y = sympy.symbols("x y")
    with pytest.raises(ZeroDivisionError), _shared_sums():
        assert all(now is not then for now, then in zip(sympy_functions(), before, strict=True))
        assert sympy.factor_terms(2 * x + 2 * x * y) == 2 * x * (y + 1)
        raise ZeroDivisionError
    assert sympy_functions() == before


def test_shared_sums_one_block_at_a_time():
    """Two threads' blocks do not overlap (a block puts back the functions it found): the
    second waits for the first, and sympy's own functions are back after both."""
    import threading

    from sympy.core import exprtools

    from calc.formulas.specialise import _shared_sums

    own, events = exprtools.gcd_terms, []
    inside, release = threading.Event(), threading.Event()

    def first() -> None:
        with _shared_sums():
            inside.set()
            release.wait(10)
            events.append("first leaves")

    def second() -> None:
        inside.wait(10)
        with _shared_sums():
            events.append("second enters")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    inside.wait(10)
    threads[1].join(0.2)  # time for the second to enter, were it let in
    release.set()
    for thread in threads:
        thread.join(10)
    assert events == ["first leaves", "second enters"]
    assert exprtools.gcd_terms is own
