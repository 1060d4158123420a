//! NIST `.rsp` known-answer files: `count`, `seed`, `pk`, `sk`, `ct`, `ss`
//! in upper-case hex, records separated by a blank line, after an optional
//! `# name` header line and a blank line (`PQCgenKAT_kem` writes one; some
//! published files have none). [`write()`] of a file's [`header()`] and parsed
//! records gives the file back byte for byte.

use std::fmt::Write;

/// One KAT record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Record index.
    pub count: usize,
    /// The 48-byte DRBG seed.
    pub seed: Vec<u8>,
    /// Public key.
    pub pk: Vec<u8>,
    /// Secret key.
    pub sk: Vec<u8>,
    /// Ciphertext.
    pub ct: Vec<u8>,
    /// Shared secret.
    pub ss: Vec<u8>,
}

/// Upper-case hex, as NIST writes it (base16ct: constant time, as a
/// record's secret key asks).
pub fn hex_upper(bytes: &[u8]) -> String {
    base16ct::upper::encode_string(bytes)
}

/// Decodes hex (either case; base16ct, constant time); an odd length or a
/// character that is no hex digit is an error that says which.
pub fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd-length hex ({} digits)", s.len()));
    }
    base16ct::mixed::decode_vec(s)
        .map_err(|_| format!("not hex: {} digits with a character that is no hex digit", s.len()))
}

/// The text of the file's first line after `# `, if it starts with one.
pub fn header(text: &str) -> Option<&str> {
    let first = text.strip_prefix("# ")?;
    Some(first.find('\n').map_or(first, |i| &first[..i]))
}

/// The file body without its `#` header line and the blank line after it:
/// what two KAT files of the same scheme must agree on byte for byte.
pub fn body(text: &str) -> &str {
    let mut rest = text;
    while rest.starts_with('#') {
        rest = rest.find('\n').map_or("", |i| &rest[i + 1..]);
    }
    rest.trim_start_matches('\n')
}

/// Parses every record. Unknown keys and malformed lines are errors, never panics.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let mut records = Vec::new();
    let mut current: Option<Record> = None;
    for (n, line) in body(text).lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once(" = ")
            .ok_or_else(|| format!("line {}: expected `key = value`", n + 1))?;
        if key == "count" {
            if let Some(r) = current.take() {
                records.push(r);
            }
            let count = value.parse().map_err(|_| format!("line {}: bad count", n + 1))?;
            current = Some(Record {
                count,
                seed: vec![],
                pk: vec![],
                sk: vec![],
                ct: vec![],
                ss: vec![],
            });
            continue;
        }
        let r = current
            .as_mut()
            .ok_or_else(|| format!("line {}: `{key}` before `count`", n + 1))?;
        let bytes = hex_decode(value).map_err(|e| format!("line {}: {e}", n + 1))?;
        match key {
            "seed" => r.seed = bytes,
            "pk" => r.pk = bytes,
            "sk" => r.sk = bytes,
            "ct" => r.ct = bytes,
            "ss" => r.ss = bytes,
            other => return Err(format!("line {}: unknown key `{other}`", n + 1)),
        }
    }
    records.extend(current);
    Ok(records)
}

/// Writes records in NIST's layout: a `# header` line and a blank line if
/// `header` is given, then each record followed by a blank line.
pub fn write(header: Option<&str>, records: &[Record]) -> String {
    let mut out = header.map_or_else(String::new, |h| format!("# {h}\n\n"));
    for r in records {
        let _ = write!(
            out,
            "count = {}\nseed = {}\npk = {}\nsk = {}\nct = {}\nss = {}\n\n",
            r.count,
            hex_upper(&r.seed),
            hex_upper(&r.pk),
            hex_upper(&r.sk),
            hex_upper(&r.ct),
            hex_upper(&r.ss)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let r = Record {
            count: 0,
            seed: vec![1; 48],
            pk: vec![0xAB],
            sk: vec![0xCD, 1],
            ct: vec![],
            ss: vec![9],
        };
        let records = [r.clone(), Record { count: 1, ..r.clone() }];
        let text = write(Some("T"), &records);
        assert!(text.starts_with("# T\n\ncount = 0\nseed = 0101"));
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed, records);
        assert_eq!(header(&text), Some("T"));
        assert_eq!(body(&text), &text[5..]);
        assert_eq!(write(header(&text), &parsed), text);
        // Without a header line, none is written.
        let bare = write(None, &records);
        assert!(bare.starts_with("count = 0\n"));
        assert_eq!(header(&bare), None);
        assert_eq!(write(header(&bare), &parse(&bare).unwrap()), bare);
        assert_eq!(header("# only"), Some("only"));
    }

    #[test]
    fn malformed_input_is_an_error() {
        assert!(parse("count = x\n").is_err());
        assert!(parse("seed = 00\n").is_err());
        assert!(parse("count = 0\nseed = 0G\n").is_err());
        assert!(parse("count = 0\nseed = 000\n").is_err());
        assert!(parse("count = 0\nfoo = 00\n").is_err());
        assert!(parse("count = 0\nnonsense\n").is_err());
    }
}
