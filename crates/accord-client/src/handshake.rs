//! Why a TLS handshake failed, in words: the rustls error found along a failure's source chain,
//! named for the person reading the message (unknown issuer, expired, not valid for the name, a
//! client certificate required, …). Apart from the TLS settings ([`crate::TlsConfig`]), so that
//! the crate's error can name the cause without depending on them.

/// The TLS cause of a failed connection, in words: the rustls error found along `error`'s source
/// chain (also inside the `std::io::Error`s the TLS stream reports it in), or `None` when the
/// failure was not a TLS one.
pub fn tls_failure(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(describe(tls));
        }
        // An io::Error's `source` skips the error it wraps (which may be another io::Error
        // around the rustls one): step into the wrapped error instead.
        next = match current.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => current.source(),
        };
        // Some transports (tonic's) keep only the rustls error's text: read it back.
        if next.is_none()
            && let Some(tls) = from_text(&current.to_string())
        {
            return Some(describe(&tls));
        }
    }
    None
}

/// The innermost name of a `Debug` rendering (`Other(OtherError(CaUsedAsEndEntity))`,
/// `ExpiredRevocationListContext { .. }`) in lowercase words (`ca used as end entity`).
fn in_words(debug: &str) -> String {
    let inner = debug.rsplit('(').next().unwrap_or(debug);
    let name: String = inner.chars().take_while(char::is_ascii_alphanumeric).collect();
    let mut words = String::new();
    for (index, character) in name.chars().enumerate() {
        if character.is_ascii_uppercase() && index > 0 {
            words.push(' ');
        }
        words.push(character.to_ascii_lowercase());
    }
    words
}

/// The rustls error a message of rustls' own `Display` stands for, for the kinds [`describe`]
/// names.
fn from_text(text: &str) -> Option<rustls::Error> {
    use rustls::{AlertDescription as Alert, CertificateError as Cert};
    let name = |rest: &str| rest.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or("").to_owned();
    if let Some((_, rest)) = text.split_once("received fatal alert: ") {
        let alert = match name(rest).as_str() {
            "CertificateRequired" => Alert::CertificateRequired,
            "BadCertificate" => Alert::BadCertificate,
            "UnsupportedCertificate" => Alert::UnsupportedCertificate,
            "CertificateUnknown" => Alert::CertificateUnknown,
            "UnknownCA" => Alert::UnknownCA,
            "CertificateExpired" => Alert::CertificateExpired,
            "CertificateRevoked" => Alert::CertificateRevoked,
            "HandshakeFailure" => Alert::HandshakeFailure,
            "ProtocolVersion" => Alert::ProtocolVersion,
            _ => return None,
        };
        return Some(rustls::Error::AlertReceived(alert));
    }
    if let Some((_, rest)) = text.split_once("invalid peer certificate: ") {
        let cause = match name(rest).as_str() {
            "UnknownIssuer" => Cert::UnknownIssuer,
            "Expired" | "ExpiredContext" => Cert::Expired,
            "NotValidYet" | "NotValidYetContext" => Cert::NotValidYet,
            "NotValidForName" | "NotValidForNameContext" => Cert::NotValidForName,
            "Revoked" => Cert::Revoked,
            "BadSignature" => Cert::BadSignature,
            "BadEncoding" => Cert::BadEncoding,
            "InvalidPurpose" | "InvalidPurposeContext" => Cert::InvalidPurpose,
            _ => return None,
        };
        return Some(rustls::Error::InvalidCertificate(cause));
    }
    None
}

fn describe(error: &rustls::Error) -> String {
    use rustls::{AlertDescription as Alert, CertificateError as Cert};
    match error {
        rustls::Error::InvalidCertificate(cause) => {
            let what = match cause {
                Cert::UnknownIssuer => "was issued by an unknown certificate authority (unknown issuer)",
                Cert::Expired | Cert::ExpiredContext { .. } => "has expired (expired)",
                Cert::NotValidYet | Cert::NotValidYetContext { .. } => "is not valid yet",
                Cert::NotValidForName | Cert::NotValidForNameContext { .. } => {
                    "is not valid for the host name asked for (not valid for name)"
                }
                Cert::Revoked => "has been revoked",
                Cert::InvalidPurpose | Cert::InvalidPurposeContext { .. } => {
                    "is not for this purpose (invalid extended key usage)"
                }
                Cert::BadSignature => "has a bad signature",
                Cert::BadEncoding => "cannot be decoded",
                Cert::UnsupportedSignatureAlgorithmContext { .. }
                | Cert::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
                    "uses an unsupported signature algorithm"
                }
                Cert::UnknownRevocationStatus => "has an unknown revocation status",
                other => return format!("the server's certificate was refused ({})", in_words(&format!("{other:?}"))),
            };
            format!("the server's certificate {what}")
        }
        rustls::Error::AlertReceived(alert) => match alert {
            Alert::CertificateRequired => "the server requires a client certificate (certificate required)".into(),
            Alert::BadCertificate | Alert::UnsupportedCertificate | Alert::CertificateUnknown => {
                "the server refused the client certificate (bad certificate)".into()
            }
            Alert::UnknownCA => "the server does not trust the client certificate's issuer (unknown CA)".into(),
            Alert::CertificateExpired => "the server refused the client certificate as expired".into(),
            Alert::CertificateRevoked => "the server refused the client certificate as revoked".into(),
            Alert::HandshakeFailure => "the server ended the handshake (handshake failure)".into(),
            Alert::ProtocolVersion => "no TLS version in common with the server (protocol version)".into(),
            other => format!("the server ended the handshake with the alert {other:?}"),
        },
        rustls::Error::NoCertificatesPresented => "the peer presented no certificate".into(),
        rustls::Error::PeerIncompatible(_) => "no TLS version or cipher suite in common with the peer".into(),
        rustls::Error::InvalidMessage(_) | rustls::Error::PeerMisbehaved(_) => {
            "the peer does not speak TLS correctly (is it an https endpoint?)".into()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_without_its_own_words_is_named_in_plain_ones() {
        assert_eq!(in_words("Other(OtherError(CaUsedAsEndEntity))"), "ca used as end entity");
        assert_eq!(in_words("ExpiredRevocationListContext { time: 1 }"), "expired revocation list context");
        let error = rustls::Error::InvalidCertificate(rustls::CertificateError::UnhandledCriticalExtension);
        assert_eq!(describe(&error), "the server's certificate was refused (unhandled critical extension)");
    }

    #[test]
    fn rustls_messages_kept_as_text_are_read_back() {
        let alert = from_text("received fatal alert: CertificateRequired").map(|error| describe(&error));
        assert_eq!(alert.as_deref(), Some("the server requires a client certificate (certificate required)"));
        let issuer = from_text("invalid peer certificate: UnknownIssuer").map(|error| describe(&error));
        assert!(issuer.is_some_and(|text| text.contains("(unknown issuer)")));
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, "received fatal alert: UnknownCA");
        assert!(tls_failure(&io).is_some_and(|text| text.contains("(unknown CA)")));
        assert!(from_text("connection refused").is_none());
    }
}
