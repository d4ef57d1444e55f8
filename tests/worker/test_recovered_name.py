"""A recovered model's default name says what it is: source (without its own decoration), configuration,
methods (issue 35: "digits-cnn (fp32, golden) · w4-sym-channel · recovered" said none of the last)."""

from worker.jobs.recovered_name import METHOD_SHORT, base_name, recovered_model_name


def test_the_demo_name_reads_as_what_the_model_is() -> None:
    name = recovered_model_name("digits-cnn (fp32, golden)", "w4-sym-channel", ["adaround"])
    assert name == "digits-cnn · w4-sym-channel · AdaRound"


def test_several_methods_in_order_and_decoration_stripped() -> None:
    name = recovered_model_name(
        "resnet (fp32) (golden)", "w4-sym-channel", ["equalization", "adaround", "bias_correction"]
    )
    assert name == "resnet · w4-sym-channel · CLE + AdaRound + bias correction"


def test_a_name_that_is_only_parentheses_is_kept_and_unknown_methods_named_as_stored() -> None:
    assert base_name("(golden)") == "(golden)"
    assert base_name("cnn (v2) final") == "cnn (v2) final"  # only trailing decoration goes
    assert recovered_model_name("m", "p", ["newmethod"]) == "m · p · newmethod"
    assert recovered_model_name("m", "p", []) == "m · p · recovered"


def test_every_method_of_the_contract_has_a_short_label_and_the_name_fits_the_column() -> None:
    from typing import get_args

    from backend.recovery_contracts import RecoveryJobParams

    annotation = RecoveryJobParams.model_fields["methods"].annotation
    names: set[str] = set()
    stack = list(get_args(annotation))
    while stack:
        arg = stack.pop()
        fields = getattr(arg, "model_fields", None)
        if fields and "name" in fields:
            names.update(get_args(fields["name"].annotation))
        else:
            stack.extend(get_args(arg))
    assert names and names <= set(METHOD_SHORT)
    assert len(recovered_model_name("x" * 300, "p", ["qat"])) == 200
