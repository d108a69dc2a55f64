#!/usr/bin/env python3
"""Checks every frame of a stackwalk JSON output against docs/schema/frame.schema.json.

  check_frames.py SCHEMA KIND FILE

KIND says where the frames are: "array" (FormatFramesJson: one array of frames),
"symbolize" (stackwalk-symbolize --json: one answer object per line, each with "frames"),
"leaks" (the leak report: each of "leaks" has "frames"), "dump" (stackwalk-dump --json: each of
"threads" has "frames"). Prints the number of frames checked
and exits 0, or names the first frame that does not conform and exits 1. No frames at all is
a failure: a check that saw nothing has checked nothing.
"""
import json
import sys

import jsonschema


def frames_of(kind, text):
    if kind == "array":
        return json.loads(text)
    if kind == "symbolize":
        return [f for line in text.splitlines() if line for f in json.loads(line)["frames"]]
    if kind == "leaks":
        return [f for leak in json.loads(text)["leaks"] for f in leak["frames"]]
    if kind == "dump":
        return [f for thread in json.loads(text)["threads"] for f in thread["frames"]]
    raise SystemExit("unknown kind " + kind)


def main():
    schema_path, kind, path = sys.argv[1:4]
    with open(schema_path) as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    with open(path, encoding="utf-8") as f:
        frames = frames_of(kind, f.read())
    if not frames:
        print("no frames in " + path)
        return 1
    for i, frame in enumerate(frames):
        errors = sorted(validator.iter_errors(frame), key=lambda e: list(e.path))
        if errors:
            print("frame %d %s: %s" % (i, json.dumps(frame), errors[0].message))
            return 1
    print("%d frames" % len(frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
