"""Reads every message the test server kept (DIR/*.eml) with Python's own e-mail
parser (policy `default`, the strict modern one) and prints one JSON line per
message: its headers, the defects the parser found in any part or header, the
tree of its parts with each one's decoded size, and the text of its text parts.
Each attachment's decoded bytes are written beside it as NNNN.<file name>.

    check.py DIR
"""

import email
import email.policy
import hashlib
import json
import sys
from pathlib import Path

HEADERS = ["From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Auto-Submitted"]


def defects(message):
    found = []
    for part in message.walk():
        found += [type(d).__name__ for d in part.defects]
        for _, value in part.items():
            found += [type(d).__name__ for d in getattr(value, "defects", [])]
    return found


def parts(message, stem, folder):
    out = []
    for part in message.walk():
        entry = {"type": part.get_content_type()}
        if part.is_multipart():
            entry["children"] = [p.get_content_type() for p in part.iter_parts()]
        else:
            payload = part.get_payload(decode=True) or b""
            entry.update(
                bytes=len(payload),
                sha256=hashlib.sha256(payload).hexdigest(),
                disposition=part.get_content_disposition(),
                filename=part.get_filename(),
            )
            if part.get_content_maintype() == "text":
                entry["text"] = part.get_content()
            if part.get_filename():
                (folder / f"{stem}.{part.get_filename()}").write_bytes(payload)
        out.append(entry)
    return out


def main():
    folder = Path(sys.argv[1])
    for path in sorted(folder.glob("*.eml")):
        raw = path.read_bytes()
        message = email.message_from_bytes(raw, policy=email.policy.default)
        headers = {h: str(message[h]) for h in HEADERS if message[h] is not None}
        envelope = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        print(
            json.dumps(
                {
                    "file": path.name,
                    "bytes": len(raw),
                    "envelope": envelope,
                    "headers": headers,
                    "defects": defects(message),
                    "parts": parts(message, path.stem, folder),
                }
            )
        )


if __name__ == "__main__":
    main()
