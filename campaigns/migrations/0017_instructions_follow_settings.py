"""Stages made from a recipe before the notes followed the settings: their recipe
sentences name the number as a placeholder, so that the worker pages read the stage's
current value (``campaigns.tasktypes.instructions``); other text is left alone."""

from django.db import migrations

# (task type, the recipe's old words, the same words with the placeholder)
RECIPE_SENTENCES = [
    (
        "question_writing",
        "Write five different questions about the topic,",
        "Write {questions_per_hit} different questions about the topic,",
    ),
    (
        "sentence_selection_answer",
        "Select the one to three sentences of the article",
        "Select the one to {max_sentences} sentences of the article",
    ),
    (
        "quiz",
        "then answer the five scored questions.",
        "then answer the {question_count} scored questions.",
    ),
    (
        "quiz",
        "Answer five questions about short passages; three right answers qualify you.",
        "Answer {question_count} questions about short passages; {pass_points} right answers "
        "qualify you.",
    ),
    (
        "mc_question_writing",
        "Read the passage and write two multiple-choice questions about it,",
        "Read the passage and write {questions_per_passage} multiple-choice questions about it,",
    ),
]


def forwards(apps, schema_editor):
    Stage = apps.get_model("campaigns", "Stage")
    for task_type, old, new in RECIPE_SENTENCES:
        for stage in Stage.objects.filter(task_type=task_type, instructions__contains=old):
            stage.instructions = stage.instructions.replace(old, new)
            stage.save(update_fields=["instructions"])


class Migration(migrations.Migration):
    dependencies = [("campaigns", "0016_model_in_the_loop")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
