from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmexplain.llm.prompts import load_template, register_template, template_path
from rmexplain.perturb.base import Draft, MethodContext, PerturbTask, methods

# Its prompt's fields and the folder of its default (a name no other method's template takes).
register_template(
    "rewrite", {"response", "attribute", "direction"}, directory=Path(__file__).parent / "prompts"
)


def prompt_files(settings: dict[str, Any]) -> dict[str, str]:
    """The prompt file its jobs read (a rule input: editing it reruns them)."""
    return {"prompt_rewrite": str(template_path("rewrite", settings["prompt"]))}


def edit(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """The attribute effects' editor: the same rewrites, each task in its own direction (no RM chose it)."""
    return rewrite(tasks, context)


@methods.register(  # the entry point's name: registering here is what makes its declarations count
    "rewrite",
    uses_llm=True,  # gets the llm section and a cached chat client
    attribute_conditioned=True,  # one perturbation per attribute: the attribute analyses apply
    llm_requests=lambda n_tasks, n_attributes, settings: n_tasks * n_attributes,  # for the plan
    prompt_inputs=prompt_files,
    effect_editor=edit,  # it can make the attribute effects' edits (analysis.effects.methods: [rewrite])
    effect_requests=lambda n_tasks, n_attributes, settings: n_tasks * n_attributes,  # per editor call
    effect_prompt_inputs=prompt_files,
    settings_schema={  # perturb.rewrite's keys, checked with the config; any other key is refused
        "prompt": {"type": ["string", "null"], "default": None},
        "max_tokens": {"type": "integer", "minimum": 1, "default": 256},
    },
)
def rewrite(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """Ask the LLM to make each response better or worse (against the RM) along each attribute."""
    chat, skips = context.services["chat"], context.services["skips"]
    template = load_template("rewrite", context.settings["prompt"])
    sampling = chat.sampling({"max_tokens": context.settings["max_tokens"]})
    slots = [(task, attribute) for task in tasks for attribute in context.attributes]
    requests = [
        chat.request(
            template.render(response=t.response, attribute=a, direction=t.direction),
            sampling,
            template.version,
        )
        for t, a in slots
    ]
    drafts = []
    for (task, attribute), answer in zip(slots, chat.completions(requests, desc="rewrite"), strict=True):
        text = (answer.text or "").strip()
        if answer.finish_reason == "length" or not text:  # never a perturbation: a counted skip
            skips.add(
                task.comparison_id, "rewrite", "cut off or empty", target=task.target, attribute=attribute
            )
            continue
        generator = f"{chat.model_id} {template.version}"
        drafts.append(
            Draft(task.comparison_id, task.target, task.direction, attribute, 0, text, [], generator)
        )
    return drafts
