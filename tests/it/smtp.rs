//! A real mail server for the e-mail tests: aiosmtpd (from the venv `.ci/setup`
//! installs) on a loopback port that each test starts, with STARTTLS on a
//! certificate of a test authority made here (rcgen) and AUTH; and Python's own
//! e-mail parser reading back what it received (`tests/smtp/`). Where the venv is
//! missing a test prints a note and passes, except on CI, where it fails; so does
//! `tidy` for the HTML checks.

use crate::object_store::{Emulator, free_port, installed, venv_python};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The login the server takes, and the password in the config's password file.
pub(crate) const USER: &str = "reports@example.com";
pub(crate) const PASSWORD: &str = "app-pw-Zq8vW3kP0xLr7TnB";

/// The venv's Python with aiosmtpd, or None (with a note).
pub(crate) fn python() -> Option<PathBuf> {
    venv_python("smtp-venv", "aiosmtpd", "aiosmtpd venv")
}

/// `tidy` (HTML Tidy), or None (with a note).
pub(crate) fn tidy() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join("tidy"))
        .find(|p| p.is_file());
    let ready = found.is_some();
    installed(found.unwrap_or_default(), ready, "tidy")
}

/// What `tidy -q -e` says of `html` (errors and warnings), empty when nothing.
pub(crate) fn tidy_findings(tidy: &Path, html: &str, dir: &Path) -> String {
    let file = dir.join("part.html");
    std::fs::write(&file, html).expect("write the HTML part");
    let out = Command::new(tidy)
        .args(["-q", "-e", "--show-warnings", "yes"])
        .arg(&file)
        .output()
        .expect("tidy runs");
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}

/// A test certificate authority and a server certificate it signed for
/// `localhost` and 127.0.0.1, as PEM files.
pub(crate) struct Certs {
    /// The authority's certificate: the config's `ca_file`.
    pub(crate) ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl Certs {
    pub(crate) fn make(dir: &Path) -> Certs {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
            IsCa, KeyPair, KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "orgledger test authority");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key"))
            .expect("CA certificate");
        let mut server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".into()])
            .expect("server params");
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("server key");
        let cert = server.signed_by(&key, &ca).expect("server certificate");
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write PEM");
            path
        };
        Certs {
            ca: write("ca.pem", ca.pem()),
            cert: write("server.pem", cert.pem()),
            key: write("server-key.pem", key.serialize_pem()),
        }
    }
}

/// How the test server behaves.
#[derive(Default)]
pub(crate) struct Setup<'a> {
    /// STARTTLS (required) on these certificates; None: in clear.
    pub(crate) tls: Option<&'a Certs>,
    /// TLS from the first byte instead of STARTTLS.
    pub(crate) implicit: bool,
    /// AUTH required, as [`USER`] with [`PASSWORD`].
    pub(crate) login: bool,
    /// The answers to DATA, in order (250 once they run out).
    pub(crate) data: Vec<u16>,
    /// The answer to RCPT TO for an address.
    pub(crate) refuse: Vec<(&'a str, u16)>,
    /// The port, when the test chose it.
    pub(crate) port: Option<u16>,
}

/// aiosmtpd on a loopback port, stopped when dropped.
pub(crate) struct MailServer {
    _process: Emulator,
    pub(crate) port: u16,
    /// Where it keeps what it received.
    pub(crate) out: PathBuf,
    py: PathBuf,
}

impl MailServer {
    pub(crate) async fn start(py: &Path, dir: &Path, setup: Setup<'_>) -> MailServer {
        let port = setup.port.unwrap_or_else(free_port);
        let out = dir.join(format!("inbox-{port}"));
        std::fs::create_dir_all(&out).expect("inbox folder");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/smtp/server.py");
        let mut cmd = Command::new(py);
        cmd.arg(script)
            .args(["--port", &port.to_string()])
            .arg("--out")
            .arg(&out);
        if let Some(certs) = setup.tls {
            cmd.arg("--cert")
                .arg(&certs.cert)
                .arg("--key")
                .arg(&certs.key);
            if setup.implicit {
                cmd.arg("--implicit");
            }
        }
        if setup.login {
            let file = dir.join("server-password");
            std::fs::write(&file, PASSWORD).expect("server password");
            cmd.args(["--user", USER]).arg("--password-file").arg(file);
        }
        let data: Vec<String> = setup.data.iter().map(u16::to_string).collect();
        cmd.args(["--data", &data.join(",")]);
        for (address, code) in setup.refuse {
            cmd.args(["--refuse", &format!("{address}={code}")]);
        }
        MailServer {
            _process: Emulator::start(cmd, port, "aiosmtpd").await,
            port,
            out,
            py: py.to_path_buf(),
        }
    }

    /// Every message received, as Python's parser reads it (`tests/smtp/check.py`):
    /// one JSON object each, in the order received.
    pub(crate) fn messages(&self) -> Vec<Value> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/smtp/check.py");
        let out = Command::new(&self.py)
            .arg(script)
            .arg(&self.out)
            .output()
            .expect("check.py runs");
        assert!(
            out.status.success(),
            "check.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("check.py JSON"))
            .collect()
    }

    /// The server's log: each AUTH, RCPT TO and DATA with its answer.
    pub(crate) fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.out.join("log.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("log JSON"))
            .collect()
    }

    /// The log's RCPT TO lines for `address`.
    pub(crate) fn rcpts(&self, address: &str) -> usize {
        self.log()
            .iter()
            .filter(|l| l["step"] == "rcpt" && l["address"] == address)
            .count()
    }

    /// An attachment of a received message as check.py saved it.
    pub(crate) fn attachment(&self, message: &Value, name: &str) -> Vec<u8> {
        let stem = message["file"]
            .as_str()
            .expect("file")
            .trim_end_matches(".eml");
        std::fs::read(self.out.join(format!("{stem}.{name}"))).expect("attachment saved")
    }
}

/// `[email]` for `server`: STARTTLS to localhost (or in clear to 127.0.0.1), the
/// test authority trusted, the login's password in a 0600 file of `dir`.
pub(crate) fn email_section(server_port: u16, certs: Option<&Certs>, dir: &Path) -> String {
    let password = crate::alerts::private_file(dir, "smtp-password", PASSWORD);
    let mut text = String::from("[email]\n");
    match certs {
        Some(certs) => {
            text.push_str(&format!("smtp_url = \"smtp://localhost:{server_port}\"\n"));
            text.push_str(&format!("ca_file = {:?}\n", certs.ca.display().to_string()));
        }
        None => text.push_str(&format!(
            "smtp_url = \"smtp://127.0.0.1:{server_port}?tls=none\"\n"
        )),
    }
    text.push_str(&format!(
        "from = \"orgledger <{USER}>\"\nusername = \"{USER}\"\npassword_file = {password:?}\ntimeout_secs = 10\n"
    ));
    text
}

/// A part of a parsed message by content type.
pub(crate) fn part<'a>(message: &'a Value, kind: &str) -> &'a Value {
    message["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .find(|p| p["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} part: {message}"))
}

/// The text of a message's plain-text part.
pub(crate) fn text(message: &Value) -> String {
    part(message, "text/plain")["text"]
        .as_str()
        .expect("text")
        .to_string()
}

/// Every `evt_` id a text names.
pub(crate) fn event_ids(text: &str) -> Vec<String> {
    text.match_indices("evt_")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|id| id.len() == 30)
        .collect()
}

/// One line per message: its file, envelope, headers and the parts' sizes, as the
/// report of a test run shows what the server received.
pub(crate) fn describe(messages: &[Value]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!(
            "{} ({} bytes, TLS {}, login {}): ",
            m["file"].as_str().unwrap_or(""),
            m["bytes"],
            m["envelope"]["tls"],
            m["envelope"]["login"]
        ));
        for (name, value) in m["headers"].as_object().into_iter().flatten() {
            out.push_str(&format!("\n    {name}: {}", value.as_str().unwrap_or("")));
        }
        for p in m["parts"].as_array().into_iter().flatten() {
            match p["children"].as_array() {
                Some(children) => out.push_str(&format!(
                    "\n    part {} of {}",
                    p["type"].as_str().unwrap_or(""),
                    children
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                None => out.push_str(&format!(
                    "\n    part {} {} bytes{}",
                    p["type"].as_str().unwrap_or(""),
                    p["bytes"],
                    p["filename"]
                        .as_str()
                        .map(|f| format!(" ({f})"))
                        .unwrap_or_default()
                )),
            }
        }
        out.push('\n');
    }
    out
}
