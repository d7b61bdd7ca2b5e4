//! AWS Signature Version 4, checked the way an AWS service checks it: the
//! canonical request rebuilt from what arrived (method, path, query, the
//! signed headers, the body's hash), the string to sign, the key derived
//! from the secret, date, region and service. Written from AWS's
//! description, apart from the signer under test, so that a mistake in one
//! is not repeated in the other. Paths are canonicalised as for every
//! service but S3 (each segment encoded twice); no dot-segment removal.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::faults::http::Request;

/// The algorithm named in the `Authorization` header.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// What an `Authorization: AWS4-HMAC-SHA256 ...` header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The access key id of `Credential=`.
    pub access_key_id: String,
    /// The scope's date, `YYYYMMDD`.
    pub date: String,
    /// The scope's region.
    pub region: String,
    /// The scope's service.
    pub service: String,
    /// `SignedHeaders=`, lower case, in order.
    pub signed_headers: Vec<String>,
    /// `Signature=`, hex.
    pub signature: String,
}

impl Signed {
    /// `date/region/service/aws4_request`.
    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date, self.region, self.service
        )
    }
}

/// Why a request does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigV4Error {
    /// No `Authorization` header, or not one of SigV4's shape, or a signed
    /// header missing (AWS's `IncompleteSignatureException`).
    Malformed(String),
    /// The signature is not the one the secret gives
    /// (AWS's `InvalidSignatureException`); what the service computed.
    Mismatch {
        /// The canonical request rebuilt from what arrived.
        canonical_request: String,
        /// The string that was signed.
        string_to_sign: String,
    },
}

impl std::fmt::Display for SigV4Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SigV4Error::Malformed(why) => write!(f, "{why}"),
            SigV4Error::Mismatch {
                canonical_request, ..
            } => write!(
                f,
                "the signature does not match; the canonical request was:\n{canonical_request}"
            ),
        }
    }
}

/// Reads an `Authorization` header value.
pub fn parse_authorization(value: &str) -> Result<Signed, SigV4Error> {
    let malformed = |why: &str| SigV4Error::Malformed(format!("{why}: {value:?}"));
    let rest = value
        .strip_prefix(ALGORITHM)
        .ok_or_else(|| malformed("not AWS4-HMAC-SHA256"))?;
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    for part in rest.split(',') {
        match part.trim().split_once('=') {
            Some(("Credential", v)) => credential = Some(v.to_string()),
            Some(("SignedHeaders", v)) => signed_headers = Some(v.to_string()),
            Some(("Signature", v)) => signature = Some(v.to_string()),
            _ => {}
        }
    }
    let credential = credential.ok_or_else(|| malformed("no Credential"))?;
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key_id, date, region, service, "aws4_request"] = scope.as_slice() else {
        return Err(malformed(
            "Credential is not KEY/DATE/REGION/SERVICE/aws4_request",
        ));
    };
    Ok(Signed {
        access_key_id: access_key_id.to_string(),
        date: date.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        signed_headers: signed_headers
            .ok_or_else(|| malformed("no SignedHeaders"))?
            .split(';')
            .map(str::to_string)
            .collect(),
        signature: signature.ok_or_else(|| malformed("no Signature"))?,
    })
}

/// Checks the signature of `request` with `secret`; what it was signed
/// for. The caller checks the key, scope and time against its own.
pub fn verify(request: &Request, secret: &str) -> Result<Signed, SigV4Error> {
    let authorization = request
        .header("authorization")
        .ok_or_else(|| SigV4Error::Malformed("no Authorization header".into()))?;
    let signed = parse_authorization(authorization)?;
    let amz_date = request
        .header("x-amz-date")
        .ok_or_else(|| SigV4Error::Malformed("no X-Amz-Date header".into()))?;
    if amz_date.get(..8) != Some(signed.date.as_str()) {
        return Err(SigV4Error::Malformed(format!(
            "the scope's date {} is not the date of X-Amz-Date {amz_date}",
            signed.date
        )));
    }
    let canonical_request = canonical_request(request, &signed.signed_headers)?;
    let string_to_sign = string_to_sign(amz_date, &signed.scope(), &canonical_request);
    let key = signing_key(secret, &signed.date, &signed.region, &signed.service);
    if hex(&mac(&key, string_to_sign.as_bytes())) == signed.signature {
        Ok(signed)
    } else {
        Err(SigV4Error::Mismatch {
            canonical_request,
            string_to_sign,
        })
    }
}

/// The canonical request: method, path, query, headers, signed header
/// names and the body's SHA-256, one per line.
pub fn canonical_request(
    request: &Request,
    signed_headers: &[String],
) -> Result<String, SigV4Error> {
    let path = if request.path.is_empty() {
        "/".to_string()
    } else {
        request
            .path
            .split('/')
            .map(|segment| uri_encode(&uri_encode(segment)))
            .collect::<Vec<_>>()
            .join("/")
    };
    let mut query: Vec<(String, String)> = request
        .query
        .iter()
        .map(|(n, v)| (uri_encode(n), uri_encode(v)))
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut headers = String::new();
    for name in signed_headers {
        let values: Vec<String> = request
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(SigV4Error::Malformed(format!(
                "the signed header {name} is not in the request"
            )));
        }
        headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    Ok(format!(
        "{}\n{path}\n{query}\n{headers}\n{}\n{}",
        request.method,
        signed_headers.join(";"),
        hex(&Sha256::digest(&request.body))
    ))
}

/// `AWS4-HMAC-SHA256`, the time, the scope and the canonical request's hash.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    )
}

/// The key of a day, region and service: HMACs chained from `AWS4<secret>`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
    let day = mac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let region = mac(&day, region.as_bytes());
    let service = mac(&region, service.as_bytes());
    mac(&service, b"aws4_request")
}

/// Signs `request` in place, every header it has included, as a client
/// does: adds `X-Amz-Date` (`YYYYMMDDTHHMMSSZ`) and `Authorization`. For
/// checking the services that verify; the client under test has its own signer.
pub fn sign(
    request: &mut Request,
    access_key_id: &str,
    secret: &str,
    scope: (&str, &str),
    amz_date: &str,
) {
    let (region, service) = scope;
    request
        .headers
        .push(("x-amz-date".to_string(), amz_date.to_string()));
    let mut names: Vec<String> = request
        .headers
        .iter()
        .map(|(n, _)| n.to_ascii_lowercase())
        .collect();
    names.sort();
    names.dedup();
    let date = amz_date.get(..8).unwrap_or_default();
    let scope = format!("{date}/{region}/{service}/aws4_request");
    // Every name comes from the request: the canonical request exists.
    let canonical = canonical_request(request, &names).unwrap_or_default();
    let key = signing_key(secret, date, region, service);
    let signature = hex(&mac(
        &key,
        string_to_sign(amz_date, &scope, &canonical).as_bytes(),
    ));
    request.headers.push((
        "authorization".to_string(),
        format!(
            "{ALGORITHM} Credential={access_key_id}/{scope}, SignedHeaders={}, Signature={signature}",
            names.join(";")
        ),
    ));
}

/// HMAC-SHA256 of `data` under `key`.
pub fn mac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length: the error cannot happen.
    Hmac::<Sha256>::new_from_slice(key)
        .map(|mut mac| {
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        })
        .unwrap_or_default()
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Percent-encodes all but the unreserved characters, as SigV4 does.
pub fn uri_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    /// The example of AWS's "Signature Version 4 signing process" pages:
    /// IAM ListUsers, signed on 2015-08-30 at 12:36:00 UTC.
    fn example() -> Request {
        let headers = [
            ("host", "iam.amazonaws.com"),
            (
                "content-type",
                "application/x-www-form-urlencoded; charset=utf-8",
            ),
            ("x-amz-date", "20150830T123600Z"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
            ),
        ];
        Request {
            method: "GET".into(),
            path: "/".into(),
            query: vec![
                ("Version".into(), "2010-05-08".into()),
                ("Action".into(), "ListUsers".into()),
            ],
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn the_aws_example_verifies_step_by_step() {
        let request = example();
        let signed = verify(&request, SECRET).unwrap();
        assert_eq!(signed.access_key_id, "AKIDEXAMPLE");
        assert_eq!(signed.scope(), "20150830/us-east-1/iam/aws4_request");
        let canonical = canonical_request(&request, &signed.signed_headers).unwrap();
        assert_eq!(
            hex(&Sha256::digest(canonical.as_bytes())),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
        );
        assert_eq!(
            hex(&signing_key(SECRET, "20150830", "us-east-1", "iam")),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
    }

    #[test]
    fn a_tampered_request_or_another_secret_does_not_verify() {
        let mut tampered = example();
        tampered.query[0].1 = "2010-05-09".into();
        assert!(matches!(
            verify(&tampered, SECRET),
            Err(SigV4Error::Mismatch { .. })
        ));
        let mut with_body = example();
        with_body.body = b"Action=DeleteUser".to_vec();
        assert!(matches!(
            verify(&with_body, SECRET),
            Err(SigV4Error::Mismatch { .. })
        ));
        assert!(matches!(
            verify(&example(), "another secret"),
            Err(SigV4Error::Mismatch { .. })
        ));
        let mut unsigned_header = example();
        unsigned_header.headers.retain(|(n, _)| n != "content-type");
        assert!(matches!(
            verify(&unsigned_header, SECRET),
            Err(SigV4Error::Malformed(_))
        ));
        let mut another_day = example();
        another_day.headers[2].1 = "20150831T123600Z".into();
        assert!(matches!(
            verify(&another_day, SECRET),
            Err(SigV4Error::Malformed(_))
        ));
    }

    #[test]
    fn what_sign_signs_verifies() {
        let mut request = example();
        request.headers.retain(|(n, _)| n == "host");
        request.body = b"{}".to_vec();
        sign(
            &mut request,
            "AKID",
            "secret",
            ("eu-west-1", "ecr"),
            "20240101T000000Z",
        );
        let signed = verify(&request, "secret").unwrap();
        assert_eq!(signed.scope(), "20240101/eu-west-1/ecr/aws4_request");
        assert_eq!(signed.signed_headers, ["host", "x-amz-date"]);
    }
}
