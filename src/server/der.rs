//! Just enough DER to read a certificate's validity, for the expiry metric
//! and the self-managed certificates' renewal, and a subject's Common Names,
//! for `--client-name` and the self-managed authority.

/// Reads one TLV at `input`; returns (tag, contents, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count].iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (length, &rest[count..])
    };
    (rest.len() >= length).then(|| (tag, &rest[..length], &rest[length..]))
}

/// Certificate -> tbsCertificate -> [version] serial signature issuer validity:
/// (notBefore, notAfter) in Unix seconds.
pub fn validity(certificate: &[u8]) -> Option<(i64, i64)> {
    let (_, certificate, _) = tlv(certificate)?;
    let (_, tbs, _) = tlv(certificate)?;
    let mut rest = tbs;
    let (tag, _, after) = tlv(rest)?;
    if tag == 0xa0 {
        rest = after; // explicit version
    }
    for _ in 0..3 {
        rest = tlv(rest)?.2; // serialNumber, signature, issuer
    }
    let (_, validity, _) = tlv(rest)?;
    let (tag, time, after_not_before) = tlv(validity)?;
    let not_before = parse_time(tag, std::str::from_utf8(time).ok()?)?;
    let (tag, time, _) = tlv(after_not_before)?;
    Some((not_before, parse_time(tag, std::str::from_utf8(time).ok()?)?))
}

/// The certificate's notAfter in Unix seconds.
pub fn not_after(certificate: &[u8]) -> Option<i64> {
    validity(certificate).map(|(_, not_after)| not_after)
}

/// The Common Names (OID 2.5.4.3) of a Name's RDNSequence given without its
/// outer SEQUENCE, as webpki's `Cert::subject` returns it. UTF8String,
/// PrintableString and IA5String only: the string types a CA writes today.
pub fn common_names(mut rdns: &[u8]) -> Vec<String> {
    const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    let mut names = Vec::new();
    while let Some((_, mut set, rest)) = tlv(rdns) {
        rdns = rest;
        while let Some((_, attribute, rest)) = tlv(set) {
            set = rest;
            if let Some((0x06, COMMON_NAME, value)) = tlv(attribute)
                && let Some((0x0c | 0x13 | 0x16, text, _)) = tlv(value)
                && let Ok(text) = std::str::from_utf8(text)
            {
                names.push(text.to_string());
            }
        }
    }
    names
}

/// UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ) to Unix seconds.
fn parse_time(tag: u8, text: &str) -> Option<i64> {
    let digits = text.strip_suffix('Z')?;
    let (year, rest) = match tag {
        0x17 => {
            let yy: i64 = digits.get(..2)?.parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, digits.get(2..)?)
        }
        0x18 => (digits.get(..4)?.parse().ok()?, digits.get(4..)?),
        _ => return None,
    };
    let field = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let (month, day, hour, minute, second) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(parse_time(0x17, "300101000000Z"), Some(1_893_456_000));
        assert_eq!(parse_time(0x18, "20991231235959Z"), Some(4_102_444_799));
        assert_eq!(parse_time(0x17, "garbage"), None);
    }

    #[test]
    fn reads_the_validity_of_a_real_certificate() {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2026, 1, 2);
        params.not_after = rcgen::date_time_ymd(2031, 6, 15);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(validity(cert.der()), Some((1_767_312_000, 1_939_248_000)));
        assert_eq!(not_after(cert.der()), Some(1_939_248_000));
        assert_eq!(not_after(&cert.der()[..40]), None, "truncated DER is not a date");
    }
}
