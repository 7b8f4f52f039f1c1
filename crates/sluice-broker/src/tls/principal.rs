//! Who a TLS client is: the subject of its certificate as Kafka names it, and Kafka's
//! `ssl.principal.mapping.rules` applied to that name.
//!
//! - [`subject_dn`]: the certificate's subject distinguished name formatted as Java's
//!   `X500Principal.getName()` (RFC 2253) formats it, which is the string Kafka's
//!   `DefaultKafkaPrincipalBuilder` hands to its mapper: the RDNs last to first, joined
//!   by `,` (multi-valued RDNs by `+`); the keywords CN, C, L, ST, O, OU, STREET, DC and
//!   UID, any other attribute as its dotted OID with the value's DER in hex (`#...`);
//!   string values with `,=+<>#;"\` escaped by a backslash, NUL as `\00`, and leading
//!   and trailing spaces escaped.
//! - [`PrincipalMapper`]: `DEFAULT` and `RULE:pattern/replacement/[LU]` rules, split and
//!   parsed with the grammar of Kafka's `SslPrincipalMapper`; the first rule whose
//!   pattern matches the whole name gives the principal name.
//!
//! The certificate has already been verified by rustls when this runs; the DER walk here
//! reads only the subject and refuses anything malformed with an error (never a panic).

use regex::Regex;

// -- DER -----------------------------------------------------------------------------------

/// One DER element: its tag, its content, and the whole encoding (tag and length too).
struct Element<'a> {
    tag: u8,
    content: &'a [u8],
    encoding: &'a [u8],
}

/// Reads the element at the start of `input`; returns it and what follows.
fn element(input: &[u8]) -> Result<(Element<'_>, &[u8]), String> {
    let malformed = |what: &str| Err(format!("malformed certificate: {what}"));
    let (&tag, rest) = input
        .split_first()
        .ok_or("malformed certificate: truncated")?;
    if tag & 0x1f == 0x1f {
        return malformed("multi-byte tag");
    }
    let (&first, mut rest) = rest
        .split_first()
        .ok_or("malformed certificate: truncated")?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return malformed("bad length");
        }
        let mut length = 0usize;
        for &byte in &rest[..count] {
            length = (length << 8) | usize::from(byte);
        }
        rest = &rest[count..];
        length
    };
    if rest.len() < length {
        return malformed("element longer than its input");
    }
    let header = input.len() - rest.len();
    Ok((
        Element {
            tag,
            content: &rest[..length],
            encoding: &input[..header + length],
        },
        &rest[length..],
    ))
}

/// Reads an element that must have `tag`.
fn expect<'a>(input: &'a [u8], tag: u8, what: &str) -> Result<(Element<'a>, &'a [u8]), String> {
    let (found, rest) = element(input)?;
    if found.tag != tag {
        return Err(format!(
            "malformed certificate: expected {what} (tag {tag:#04x}), found tag {:#04x}",
            found.tag
        ));
    }
    Ok((found, rest))
}

/// An OBJECT IDENTIFIER's content in dotted form.
fn oid_text(content: &[u8]) -> Result<String, String> {
    let mut arcs: Vec<u64> = Vec::new();
    let mut value: u64 = 0;
    for (i, &byte) in content.iter().enumerate() {
        if value > (u64::MAX >> 7) {
            return Err("malformed certificate: OID arc too large".into());
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            if arcs.is_empty() {
                let (first, second) = match value {
                    0..40 => (0, value),
                    40..80 => (1, value - 40),
                    _ => (2, value - 80),
                };
                arcs.push(first);
                arcs.push(second);
            } else {
                arcs.push(value);
            }
            value = 0;
        } else if i + 1 == content.len() {
            return Err("malformed certificate: truncated OID".into());
        }
    }
    if arcs.is_empty() {
        return Err("malformed certificate: empty OID".into());
    }
    Ok(arcs
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("."))
}

/// The keywords Java's `X500Principal.getName()` uses (RFC 2253's, with DC and UID).
fn rfc2253_keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// The string types Java writes as text (PrintableString, T61String, IA5String,
/// GeneralString, BMPString, UTF8String); any other is written as `#` and hex.
fn is_string_tag(tag: u8) -> bool {
    matches!(tag, 0x13 | 0x14 | 0x16 | 0x1b | 0x1e | 0x0c)
}

/// One attribute as `AVA.toRFC2253String` writes it.
fn attribute(oid: &str, value: &Element<'_>) -> String {
    let keyword = rfc2253_keyword(oid);
    let mut out = String::from(keyword.unwrap_or(oid));
    out.push('=');
    if keyword.is_none() || !is_string_tag(value.tag) {
        out.push('#');
        for byte in value.encoding {
            out.push_str(&format!("{byte:02x}"));
        }
        return out;
    }
    // Java reads the bytes as UTF-8 whatever the string type.
    let text = String::from_utf8_lossy(value.content);
    let mut escaped: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if ",=+<>#;\"\\".contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.len() - escaped.iter().rev().take_while(|c| blank(c)).count();
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= trail.max(lead) {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

/// The subject of a DER-encoded X.509 certificate as Java's
/// `X500Principal.getName()` (RFC 2253) writes it.
pub fn subject_dn(certificate: &[u8]) -> Result<String, String> {
    let (certificate, _) = expect(certificate, 0x30, "Certificate")?;
    let (tbs, _) = expect(certificate.content, 0x30, "TBSCertificate")?;
    let mut rest = tbs.content;
    // [0] EXPLICIT version, when present.
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.1;
    }
    let (_serial, rest) = expect(rest, 0x02, "serialNumber")?;
    let (_signature, rest) = expect(rest, 0x30, "signature")?;
    let (_issuer, rest) = expect(rest, 0x30, "issuer")?;
    let (_validity, rest) = expect(rest, 0x30, "validity")?;
    let (subject, _) = expect(rest, 0x30, "subject")?;
    name_dn(subject.content)
}

/// A Name's content (a SEQUENCE OF RelativeDistinguishedName) in RFC 2253 form.
fn name_dn(mut names: &[u8]) -> Result<String, String> {
    let mut rdns = Vec::new();
    while !names.is_empty() {
        let (rdn, rest) = expect(names, 0x31, "RelativeDistinguishedName")?;
        names = rest;
        let mut attributes = Vec::new();
        let mut set = rdn.content;
        while !set.is_empty() {
            let (pair, rest) = expect(set, 0x30, "AttributeTypeAndValue")?;
            set = rest;
            let (oid, value) = expect(pair.content, 0x06, "attribute type")?;
            let (value, _) = element(value)?;
            attributes.push(attribute(&oid_text(oid.content)?, &value));
        }
        rdns.push(attributes.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

// -- ssl.principal.mapping.rules -----------------------------------------------------------

/// Kafka's rule grammar (`SslPrincipalMapper.RULE_PATTERN`): `DEFAULT`, or
/// `RULE:pattern/replacement/` with an optional `L` or `U`, `\` escaping within the
/// pattern and replacement; anything else is captured by the last group as invalid.
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

/// One mapping rule.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Pattern {
        /// As written, for display.
        source: String,
        /// The pattern anchored at both ends (Java's `Matcher.matches`).
        whole: Regex,
        /// The pattern unanchored (Java's `String.replaceAll`).
        pattern: Regex,
        /// The replacement, translated to the regex crate's syntax.
        replacement: String,
        /// As written, for display.
        replacement_source: String,
        lower: bool,
        upper: bool,
    },
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

impl PartialEq for PrincipalMapper {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}
impl Eq for PrincipalMapper {}

impl Default for PrincipalMapper {
    fn default() -> Self {
        PrincipalMapper {
            rules: vec![Rule::Default],
            text: "DEFAULT".into(),
        }
    }
}

impl std::fmt::Display for PrincipalMapper {
    /// As Kafka's `SslPrincipalMapper.toString()`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|rule| match rule {
                Rule::Default => "DEFAULT".to_string(),
                Rule::Pattern {
                    source,
                    replacement_source,
                    lower,
                    upper,
                    ..
                } => {
                    let flag = if *lower {
                        "/L"
                    } else if *upper {
                        "/U"
                    } else {
                        ""
                    };
                    format!("RULE:{source}/{replacement_source}{flag}")
                }
            })
            .collect();
        write!(f, "SslPrincipalMapper(rules = [{}])", rules.join(", "))
    }
}

impl PrincipalMapper {
    /// Parses the rules as Kafka's `SslPrincipalMapper.fromRules` does; an error names
    /// the invalid rule.
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        let splitter = Regex::new(&format!(r"\s*({RULE_PATTERN})\s*(,\s*|$)"))
            .expect("the rule splitter compiles");
        let parser = Regex::new(&format!("^(?:{RULE_PATTERN})")).expect("the rule parser compiles");
        let mut rules = Vec::new();
        for split in splitter.captures_iter(text.trim()) {
            let rule = split.get(1).map_or("", |m| m.as_str());
            let Some(parsed) = parser.captures(rule) else {
                return Err(format!("Invalid rule: {rule}"));
            };
            let end = parsed.get(0).map_or(0, |m| m.end());
            if end != rule.len() {
                return Err(format!(
                    "Invalid rule: `{rule}`, unmatched substring: `{}`",
                    &rule[end..]
                ));
            }
            if parsed.get(1).is_some() {
                rules.push(Rule::Default);
            } else if let Some(pattern) = parsed.get(2) {
                let source = pattern.as_str().to_string();
                let replacement_source = parsed.get(4).map_or("", |m| m.as_str()).to_string();
                let flag = parsed.get(6).map_or("", |m| m.as_str());
                let compile = |text: &str| {
                    Regex::new(text)
                        .map_err(|error| format!("Invalid rule: `{rule}`: pattern: {error}"))
                };
                let pattern = compile(&source)?;
                let whole = compile(&format!("^(?:{source})$"))?;
                let replacement = java_replacement(&replacement_source, pattern.captures_len() - 1)
                    .map_err(|error| format!("Invalid rule: `{rule}`: {error}"))?;
                rules.push(Rule::Pattern {
                    source,
                    whole,
                    pattern,
                    replacement,
                    replacement_source,
                    lower: flag == "L",
                    upper: flag == "U",
                });
            }
            // Empty rules are ignored.
        }
        Ok(PrincipalMapper {
            rules,
            text: text.to_string(),
        })
    }

    /// The principal name for `dn`: the first rule that applies; `None` when none does
    /// (Kafka then fails the connection's authentication).
    pub fn name(&self, dn: &str) -> Option<String> {
        self.rules.iter().find_map(|rule| match rule {
            Rule::Default => Some(dn.to_string()),
            Rule::Pattern {
                whole,
                pattern,
                replacement,
                lower,
                upper,
                ..
            } => {
                if !whole.is_match(dn) {
                    return None;
                }
                let name = pattern.replace_all(dn, replacement.as_str()).into_owned();
                Some(if *lower {
                    name.to_lowercase()
                } else if *upper {
                    name.to_uppercase()
                } else {
                    name
                })
            }
        })
    }
}

/// Translates a Java `Matcher.replaceAll` replacement into the regex crate's syntax,
/// after Kafka's `escapeLiteralBackReferences` (a `$n` beyond the pattern's groups is
/// literal text, a `$nm` beyond them is `$n` then `m`): `$n` becomes `${n}`, `\c` the
/// literal `c`, a literal `$` becomes `$$`.
fn java_replacement(replacement: &str, groups: usize) -> Result<String, String> {
    let chars: Vec<char> = replacement.chars().collect();
    let mut out = String::new();
    let literal = |out: &mut String, c: char| {
        if c == '$' {
            out.push_str("$$");
        } else {
            out.push(c);
        }
    };
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err("character to be escaped is missing".into());
                };
                literal(&mut out, next);
                i += 2;
            }
            '$' => {
                let digits: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if digits.is_empty() {
                    return Err("Illegal group reference in the replacement".into());
                }
                // Kafka's escapeLiteralBackReferences, then Java's own reading of the
                // digits: the longest prefix naming an existing group.
                let first = usize::from(digits.as_bytes()[0] - b'0');
                if groups > 0 && !digits.starts_with('0') && first > groups {
                    literal(&mut out, '$');
                    i += 1;
                    continue;
                }
                if first > groups {
                    return Err(format!("No group {first} in the pattern"));
                }
                let mut number = first;
                let mut used = 1;
                for d in digits.bytes().skip(1) {
                    let next = number * 10 + usize::from(d - b'0');
                    if next > groups {
                        break;
                    }
                    number = next;
                    used += 1;
                }
                out.push_str(&format!("${{{number}}}"));
                i += 1 + used;
            }
            c => {
                literal(&mut out, c);
                i += 1;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // -- DER builders for the tests --

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        if content.len() < 0x80 {
            out.push(content.len() as u8);
        } else {
            out.push(0x82);
            out.extend_from_slice(&(content.len() as u16).to_be_bytes());
        }
        out.extend_from_slice(content);
        out
    }

    fn oid(dotted: &str) -> Vec<u8> {
        let arcs: Vec<u64> = dotted.split('.').map(|a| a.parse().unwrap()).collect();
        let mut content = Vec::new();
        let mut push = |mut value: u64| {
            let mut bytes = vec![(value & 0x7f) as u8];
            value >>= 7;
            while value > 0 {
                bytes.push(0x80 | (value & 0x7f) as u8);
                value >>= 7;
            }
            bytes.reverse();
            content.extend(bytes);
        };
        push(arcs[0] * 40 + arcs[1]);
        for &arc in &arcs[2..] {
            push(arc);
        }
        tlv(0x06, &content)
    }

    /// A Name from RDNs in DER order, each a list of (OID, string tag, value).
    fn name(rdns: &[&[(&str, u8, &str)]]) -> Vec<u8> {
        let mut content = Vec::new();
        for rdn in rdns {
            let mut set = Vec::new();
            for (attribute, tag, value) in *rdn {
                let mut pair = oid(attribute);
                pair.extend(tlv(*tag, value.as_bytes()));
                set.extend(tlv(0x30, &pair));
            }
            content.extend(tlv(0x31, &set));
        }
        tlv(0x30, &content)
    }

    fn certificate(subject: Vec<u8>) -> Vec<u8> {
        let mut tbs = tlv(0xa0, &tlv(0x02, &[2]));
        tbs.extend(tlv(0x02, &[0x01, 0x23]));
        tbs.extend(tlv(0x30, &oid("1.2.840.113549.1.1.11")));
        tbs.extend(name(&[&[("2.5.4.3", 0x0c, "issuer")]]));
        tbs.extend(tlv(0x30, &[]));
        tbs.extend(subject);
        tbs.extend(tlv(0x30, &[]));
        let mut cert = tlv(0x30, &tbs);
        cert.extend(tlv(0x30, &oid("1.2.840.113549.1.1.11")));
        cert.extend(tlv(0x03, &[0]));
        tlv(0x30, &cert)
    }

    const CN: &str = "2.5.4.3";
    const OU: &str = "2.5.4.11";
    const O: &str = "2.5.4.10";
    const C: &str = "2.5.4.6";
    const UTF8: u8 = 0x0c;
    const PRINTABLE: u8 = 0x13;

    fn dn(rdns: &[&[(&str, u8, &str)]]) -> String {
        subject_dn(&certificate(name(rdns))).unwrap()
    }

    #[test]
    fn the_subject_reads_last_rdn_first_with_rfc2253_keywords() {
        // `openssl req -subj "/C=US/O=Acme/OU=eng/CN=alice"`: X500Principal.getName()
        // gives "CN=alice,OU=eng,O=Acme,C=US" (the example of the brief, and the form of
        // Kafka's documented "CN=serviceuser,OU=ServiceUsers,O=Unknown,...").
        assert_eq!(
            dn(&[
                &[(C, PRINTABLE, "US")],
                &[(O, UTF8, "Acme")],
                &[(OU, UTF8, "eng")],
                &[(CN, UTF8, "alice")],
            ]),
            "CN=alice,OU=eng,O=Acme,C=US"
        );
        // The X500Principal javadoc's example name.
        assert_eq!(
            dn(&[
                &[(C, PRINTABLE, "US")],
                &[(O, PRINTABLE, "Sun Microsystems")],
                &[(OU, PRINTABLE, "JavaSoft")],
                &[(CN, PRINTABLE, "Duke")],
            ]),
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US"
        );
        // L, ST, STREET, DC, UID have keywords; a multi-valued RDN joins with '+'.
        assert_eq!(
            dn(&[
                &[("0.9.2342.19200300.100.1.25", 0x16, "com")],
                &[("0.9.2342.19200300.100.1.25", 0x16, "example")],
                &[("2.5.4.7", UTF8, "Fulton"), ("2.5.4.8", UTF8, "MD")],
                &[("2.5.4.9", UTF8, "1 Main St")],
                &[("0.9.2342.19200300.100.1.1", UTF8, "jdoe")],
            ]),
            "UID=jdoe,STREET=1 Main St,L=Fulton+ST=MD,DC=example,DC=com"
        );
    }

    #[test]
    fn other_attributes_are_dotted_oids_with_hex_der() {
        // emailAddress (IA5String) has no RFC 2253 keyword: Java writes
        // "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d".
        assert_eq!(
            dn(&[
                &[("1.2.840.113549.1.9.1", 0x16, "alice@example.com")],
                &[(CN, UTF8, "alice")],
            ]),
            "CN=alice,1.2.840.113549.1.9.1=#1611616c69636540\
             6578616d706c652e636f6d"
        );
        // SERIALNUMBER, too.
        assert_eq!(
            dn(&[&[("2.5.4.5", PRINTABLE, "42")], &[(CN, UTF8, "x")]]),
            "CN=x,2.5.4.5=#13023432"
        );
        // A known keyword with a non-string value (an OCTET STRING) is hex as well.
        assert_eq!(dn(&[&[(CN, 0x04, "ab")]]), "CN=#04026162");
    }

    #[test]
    fn special_characters_are_escaped_as_java_escapes_them() {
        // Kafka's SslPrincipalMapperTest: "CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz".
        assert_eq!(
            dn(&[
                &[("0.9.2342.19200300.100.1.25", 0x16, "cz")],
                &[("0.9.2342.19200300.100.1.25", 0x16, "geodis")],
                &[(OU, UTF8, "ITZ")],
                &[(CN, UTF8, "Tkac, Adam")],
            ]),
            r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz"
        );
        assert_eq!(
            dn(&[&[(CN, UTF8, r#"a=b+c<d>e#f;g"h\i"#)]]),
            r#"CN=a\=b\+c\<d\>e\#f\;g\"h\\i"#
        );
        assert_eq!(dn(&[&[(CN, UTF8, "  two  ")]]), r"CN=\ \ two\ \ ");
        assert_eq!(dn(&[&[(CN, UTF8, "nul\0")]]), r"CN=nul\00");
        assert_eq!(dn(&[&[(CN, UTF8, "Müller_*@x")]]), "CN=Müller_*@x");
        assert_eq!(dn(&[]), "");
    }

    #[test]
    fn a_malformed_certificate_is_an_error_not_a_panic() {
        let good = certificate(name(&[&[(CN, UTF8, "alice")]]));
        for cut in 0..good.len() {
            assert!(subject_dn(&good[..cut]).is_err(), "cut at {cut}");
        }
        // Any byte replaced by a bad tag or length: an answer, never a panic.
        for byte in [0xffu8, 0x1f, 0x85, 0x80] {
            let mut bad = good.clone();
            for at in 0..bad.len() {
                let saved = bad[at];
                bad[at] = byte;
                let _ = subject_dn(&bad);
                bad[at] = saved;
            }
        }
        assert!(subject_dn(&[]).is_err());
        assert!(subject_dn(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    // -- the mapping rules: Kafka's SslPrincipalMapperTest as data --

    #[test]
    fn kafkas_valid_rules_parse() {
        for rules in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
            "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
            "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
        ] {
            PrincipalMapper::parse(rules).unwrap_or_else(|e| panic!("{rules}: {e}"));
        }
    }

    #[test]
    fn kafkas_invalid_rules_are_refused() {
        for rules in [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        ] {
            assert!(
                PrincipalMapper::parse(rules).is_err(),
                "{rules} was accepted"
            );
        }
        // A pattern the regex engine refuses is refused at load too.
        assert!(PrincipalMapper::parse("RULE:(unclosed/$1/").is_err());
    }

    #[test]
    fn kafkas_mapping_examples() {
        // SslPrincipalMapperTest.testSslPrincipalMapper.
        let mapper = PrincipalMapper::parse(
            &[
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
            .join(", "),
        )
        .unwrap();
        let name = |dn: &str| mapper.name(dn).unwrap();
        assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke");
        assert_eq!(
            name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
            "duke@sme"
        );
        assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
        assert_eq!(name("cN=duke,OU=JavaSoft,O=Sun Microsystems"), "DUKE");
        assert_eq!(
            name("OU=JavaSoft,O=Sun Microsystems,C=US"),
            "OU=JavaSoft,O=Sun Microsystems,C=US"
        );
        // testCommaWithWhitespace.
        let mapper = PrincipalMapper::parse(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT").unwrap();
        assert_eq!(
            mapper
                .name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz")
                .unwrap(),
            r"Tkac\, Adam"
        );
        // The example of Kafka's documentation (security.html, "Customizing SSL User
        // Name"): CN=serviceuser,... -> serviceuser; CN=adminUser,OU=Admin,... ->
        // adminuser@admin.
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\
             RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\
             RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT",
        )
        .unwrap();
        assert_eq!(
            mapper
                .name("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
                .unwrap(),
            "serviceuser"
        );
        assert_eq!(
            mapper
                .name("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
                .unwrap(),
            "adminuser@admin"
        );
        // No rule applies: no name (Kafka fails the authentication).
        let mapper = PrincipalMapper::parse("RULE:^CN=(.*),OU=x$/$1/").unwrap();
        assert_eq!(mapper.name("CN=a,OU=y"), None);
        assert_eq!(PrincipalMapper::default().name("CN=a").unwrap(), "CN=a");
    }

    #[test]
    fn kafkas_rule_splitting() {
        // SslPrincipalMapperTest.testRulesSplitting: "seeing is believing".
        for (expected, rules) in [
            ("[]", ""),
            ("[DEFAULT]", "DEFAULT"),
            ("[RULE:/]", "RULE://"),
            ("[RULE:/.*]", "RULE:/.*/"),
            ("[RULE:/.*/L]", "RULE:/.*/L"),
            ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
            ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
            (
                "[RULE:   /     , DEFAULT]",
                "  RULE:   /     / ,  DEFAULT  ",
            ),
            (
                "[RULE:  /     /U, DEFAULT]",
                "  RULE:  /     /U   ,DEFAULT  ",
            ),
            (
                "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
                "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            ),
            ("[]", ",   , , ,      , , ,   "),
            ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
            (
                "[RULE: /   , DEFAULT]",
                ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
            ),
            (
                "[RULE:   /  /U, DEFAULT]",
                "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
            ),
            (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
            (
                r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
                r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
            ),
        ] {
            let mapper = PrincipalMapper::parse(rules).unwrap_or_else(|e| panic!("{rules}: {e}"));
            assert_eq!(
                mapper.to_string(),
                format!("SslPrincipalMapper(rules = {expected})"),
                "{rules}"
            );
        }
    }

    #[test]
    fn replacements_follow_java() {
        assert_eq!(java_replacement("$1@$2", 2).unwrap(), "${1}@${2}");
        // Kafka's escapeLiteralBackReferences: $4 with three groups is literal.
        assert_eq!(java_replacement("$1@$4", 3).unwrap(), "${1}@$$4");
        // Java reads $12 as group 1 then '2' when there is no group 12.
        assert_eq!(java_replacement("$12", 3).unwrap(), "${1}2");
        assert_eq!(java_replacement("$12", 12).unwrap(), "${12}");
        assert_eq!(java_replacement(r"a\$b\\", 1).unwrap(), r"a$$b\");
        assert!(java_replacement("$x", 1).is_err());
        assert!(java_replacement("a\\", 1).is_err());
    }
}
