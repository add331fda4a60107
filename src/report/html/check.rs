//! A strict well-formedness check of the page (it is written XHTML-compatible):
//! every element closed in order, attributes quoted, `&` only in entities, one root.
//! The tests run it on every page they build.

/// `Ok` when `page` is well-formed; otherwise where and why not.
pub fn well_formed(page: &str) -> Result<(), String> {
    let b = page.as_bytes();
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' => {
                let rest = &page[i..];
                if let Some(body) = rest.strip_prefix("<!--") {
                    let end = body.find("-->").ok_or(format!("unclosed comment at {i}"))?;
                    i += 4 + end + 3;
                    continue;
                }
                if rest.starts_with("<!") || rest.starts_with("<?") {
                    if i != 0 && !stack.is_empty() {
                        return Err(format!("declaration inside an element at {i}"));
                    }
                    let end = rest
                        .find('>')
                        .ok_or(format!("unclosed declaration at {i}"))?;
                    i += end + 1;
                    continue;
                }
                let end = tag_end(rest).ok_or(format!("unclosed tag at {i}"))?;
                let tag = &rest[1..end];
                if let Some(name) = tag.strip_prefix('/') {
                    let name = name.trim_end();
                    match stack.pop() {
                        Some(open) if open == name => {}
                        Some(open) => {
                            return Err(format!("</{name}> at {i} closes <{open}>"));
                        }
                        None => return Err(format!("</{name}> at {i} closes nothing")),
                    }
                } else {
                    let (inner, empty) = match tag.strip_suffix('/') {
                        Some(t) => (t, true),
                        None => (tag, false),
                    };
                    let name_end = inner
                        .find(|c: char| c.is_ascii_whitespace())
                        .unwrap_or(inner.len());
                    let name = &inner[..name_end];
                    if name.is_empty()
                        || !name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':')
                    {
                        return Err(format!("bad tag name {name:?} at {i}"));
                    }
                    attributes(&inner[name_end..]).map_err(|e| format!("<{name}> at {i}: {e}"))?;
                    if stack.is_empty() {
                        roots += 1;
                    }
                    if !empty {
                        stack.push(name);
                    }
                }
                i += end + 1;
            }
            b'&' => {
                entity(&page[i..]).map_err(|e| format!("at {i}: {e}"))?;
                i += 1;
            }
            _ => {
                if stack.is_empty() && !b[i].is_ascii_whitespace() {
                    return Err(format!("text outside the root element at {i}"));
                }
                i += 1;
            }
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!("<{open}> is never closed"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(())
}

/// The index of the `>` that ends the tag at the start of `s` (outside quotes).
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (k, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(k),
            (None, '<') => return None,
            _ => {}
        }
    }
    None
}

/// `name="value"` pairs separated by white space; names unique.
fn attributes(s: &str) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or(format!("attribute without value: {rest:?}"))?;
        let name = rest[..eq].trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '_'))
        {
            return Err(format!("bad attribute name {name:?}"));
        }
        if seen.contains(&name) {
            return Err(format!("attribute {name} twice"));
        }
        seen.push(name);
        let after = rest[eq + 1..].trim_start();
        let q = after
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or(format!("attribute {name} is not quoted"))?;
        let close = after[1..]
            .find(q)
            .ok_or(format!("attribute {name} is not closed"))?;
        let value = &after[1..1 + close];
        if value.contains('<') {
            return Err(format!("'<' in attribute {name}"));
        }
        for (k, _) in value.match_indices('&') {
            entity(&value[k..])?;
        }
        rest = after[close + 2..].trim_start();
    }
    Ok(())
}

/// `&name;`, `&#123;` or `&#x1F;` at the start of `s`.
fn entity(s: &str) -> Result<(), String> {
    let end = s
        .find(';')
        .filter(|&e| e <= 10)
        .ok_or("'&' outside an entity".to_string())?;
    let body = &s[1..end];
    let ok = if let Some(num) = body.strip_prefix("#x") {
        !num.is_empty() && num.chars().all(|c| c.is_ascii_hexdigit())
    } else if let Some(num) = body.strip_prefix('#') {
        !num.is_empty() && num.chars().all(|c| c.is_ascii_digit())
    } else {
        matches!(body, "amp" | "lt" | "gt" | "quot" | "apos")
    };
    if ok {
        Ok(())
    } else {
        Err(format!("unknown entity &{body};"))
    }
}

#[cfg(test)]
mod tests {
    use super::well_formed;

    #[test]
    fn accepts_balanced_xhtml() {
        let page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/></head>\
                    <body><p title=\"a &amp; b\">x &lt; y</p><!-- c --></body></html>\n";
        assert_eq!(well_formed(page), Ok(()));
    }

    #[test]
    fn rejects_what_a_browser_would_guess_at() {
        for bad in [
            "<html><p></html>",
            "<html><meta charset=\"utf-8\"></html>",
            "<html><p>a & b</p></html>",
            "<html><p class=x>a</p></html>",
            "<html></p></html>",
            "<html></html><html></html>",
            "<html><p a=\"1\" a=\"2\"/></html>",
            "<html><p>&nbsp;</p></html>",
        ] {
            assert!(well_formed(bad).is_err(), "{bad}");
        }
    }
}
