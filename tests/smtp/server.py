"""A mail server for orgledger's tests, on a loopback port: aiosmtpd with STARTTLS
(or TLS from the start) on a certificate the test made, and AUTH, answering as the
test's script says. Each message it accepts is kept as NNNN.eml (with NNNN.json:
the envelope, whether TLS and a login were used) in the output folder; each
RCPT TO and DATA is one line of log.jsonl there.

    server.py --port P --out DIR [--cert PEM --key PEM [--implicit]]
              [--user NAME --password-file FILE] [--data 451,250,...]
              [--refuse ADDRESS=CODE ...]

--data: the answers to DATA, in order (250 once they run out); --refuse: the
answer to RCPT TO for an address. Runs until SIGTERM.
"""

import argparse
import json
import signal
import ssl
import threading
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

TEXTS = {4: "4.3.0 try again later", 5: "5.1.1 mailbox unavailable"}


class Handler:
    def __init__(self, out, data, refuse):
        self.out = Path(out)
        self.data = list(data)
        self.refuse = refuse
        self.count = 0
        self.lock = threading.Lock()

    def log(self, **entry):
        with self.lock, open(self.out / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        code = self.refuse.get(address.lower())
        self.log(step="rcpt", address=address, answer=code or 250)
        if code:
            return f"{code} {TEXTS[code // 100]} <{address}>"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        answer = self.data.pop(0) if self.data else 250
        self.log(step="data", to=envelope.rcpt_tos, answer=answer)
        if answer != 250:
            return f"{answer} {TEXTS[answer // 100]}"
        with self.lock:
            self.count += 1
            name = self.out / f"{self.count:04d}"
        name.with_suffix(".eml").write_bytes(envelope.original_content)
        envelope_facts = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "tls": session.ssl is not None
            or server.transport.get_extra_info("ssl_object") is not None,
            "login": session.authenticated,
        }
        name.with_suffix(".json").write_text(json.dumps(envelope_facts), encoding="utf-8")
        return f"250 2.0.0 OK queued as {self.count:04d}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--implicit", action="store_true")
    parser.add_argument("--user")
    parser.add_argument("--password-file")
    parser.add_argument("--data", default="")
    parser.add_argument("--refuse", action="append", default=[])
    args = parser.parse_args()

    data = [int(code) for code in args.data.split(",") if code]
    refuse = {}
    for pair in args.refuse:
        address, code = pair.rsplit("=", 1)
        refuse[address.lower()] = int(code)
    handler = Handler(args.out, data, refuse)

    options = {"hostname": "127.0.0.1", "port": args.port}
    if args.cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.cert, args.key)
        if args.implicit:
            options["ssl_context"] = context
        else:
            options.update(tls_context=context, require_starttls=True)
    if args.user:
        password = Path(args.password_file).read_text(encoding="utf-8").strip()

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = isinstance(auth_data, LoginPassword) and (
                auth_data.login.decode() == args.user and auth_data.password.decode() == password
            )
            handler.log(step="auth", mechanism=mechanism, ok=ok)
            return AuthResult(success=ok, handled=False)

        # aiosmtpd knows of STARTTLS only: on TLS from the start it would not offer
        # AUTH if it had to be inside TLS, which it is anyway.
        options.update(
            authenticator=authenticator,
            auth_required=True,
            auth_require_tls=bool(args.cert) and not args.implicit,
        )
    controller = Controller(handler, **options)
    controller.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
