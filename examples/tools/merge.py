#!/usr/bin/env python3
"""A one-shot tool in JP's legacy format that asks before acting.

jptool runs it as `merge.py '{{tool}}'`: the JSON argument holds the call's
arguments and the answers collected so far. Without an answer for "branch" it
asks which branch (a Select question, with context in pre_amble); with one,
it asks for confirmation (Boolean); with both, it reports what it did.
"""
import json
import sys

tool = json.loads(sys.argv[1])
answers = tool.get("answers", {})
feature = tool.get("arguments", {}).get("feature", "feature")

if "branch" not in answers:
    out = {"type": "needs_input", "question": {
        "id": "branch",
        "text": "Which branch should I merge into?",
        "pre_amble": f"`{feature}` is 3 commits ahead of main.",
        "answer_type": {"Select": {"options": ["main", "develop", "staging"]}},
        "default": "main"}}
elif "confirm" not in answers:
    out = {"type": "needs_input", "question": {
        "id": "confirm",
        "text": f"Merge `{feature}` into {answers['branch']} now?",
        "answer_type": "Boolean",
        "default": True}}
elif answers["confirm"]:
    out = {"type": "success", "content": f"Merged `{feature}` into {answers['branch']} (3 commits)."}
else:
    out = {"type": "error", "message": "Merge cancelled.", "trace": [], "transient": False}
print(json.dumps(out))
