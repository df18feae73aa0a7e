//! Whom HTTPS trusts, in the way each system expects, paid for only when HTTPS is used.
//!
//! A client made from [`client_config`] loads nothing when it is built: the trust roots are
//! loaded at the first certificate it has to check (or earlier, on a thread of their own,
//! by [`warm`]). A run that only talks plain HTTP to a local server never loads them.
//!
//! - macOS and Windows: the system's own verifier (`rustls-platform-verifier`: the keychain,
//!   the certificate store), which also honours what the user or the company installed there.
//! - Linux and other Unix systems: the distribution's bundle file (one read: Debian's
//!   `/etc/ssl/certs/ca-certificates.crt`, Fedora's, openSUSE's, Alpine's), or `SSL_CERT_FILE`
//!   / `SSL_CERT_DIR` when set; only without any of those, every file under the system's
//!   certificate directories (`rustls-native-certs`), which is what costs a stat and a read
//!   per file.

use std::sync::{Arc, OnceLock};

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// A TLS configuration for HTTPS clients (ALPN for HTTP/2 and 1.1) whose certificate checks
/// load the system's trust roots the first time one is needed.
pub fn client_config(provider: Arc<CryptoProvider>) -> Result<rustls::ClientConfig, rustls::Error> {
    let verifier = Arc::new(LazyVerifier::new(provider.clone()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Loads the trust roots now, on a thread of its own, so that the first HTTPS request does
/// not wait for them. Call it when an HTTPS endpoint is known to come.
pub fn warm(provider: Arc<CryptoProvider>) {
    let _ = std::thread::Builder::new()
        .name("trust-roots".into())
        .spawn(move || {
            let _ = roots_for(&provider);
        });
}

/// The verifier built once per process, shared by every client: loading roots twice costs
/// twice.
fn roots_for(provider: &Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    static VERIFIER: OnceLock<Result<Arc<dyn ServerCertVerifier>, rustls::Error>> = OnceLock::new();
    VERIFIER
        .get_or_init(|| system_verifier(provider.clone()))
        .clone()
}

#[cfg(any(target_os = "macos", windows))]
fn system_verifier(
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    Ok(Arc::new(rustls_platform_verifier::Verifier::new(provider)?))
}

#[cfg(not(any(target_os = "macos", windows)))]
fn system_verifier(
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(unix_roots());
    if added == 0 {
        return Err(rustls::Error::General(
            "no CA certificates were found on this system (install the ca-certificates \
             package, or set SSL_CERT_FILE to a PEM bundle)"
                .into(),
        ));
    }
    rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| rustls::Error::General(e.to_string()))
}

/// The distributions' bundle files, the first that exists is read.
#[cfg(not(any(target_os = "macos", windows)))]
const BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

#[cfg(not(any(target_os = "macos", windows)))]
fn unix_roots() -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    let overridden = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if !overridden && let Some(bundle) = BUNDLES.iter().find(|p| std::path::Path::new(p).is_file())
    {
        let certs: Vec<_> = CertificateDer::pem_file_iter(bundle)
            .map(|certs| certs.filter_map(Result::ok).collect())
            .unwrap_or_default();
        if !certs.is_empty() {
            return certs;
        }
    }
    rustls_native_certs::load_native_certs().certs
}

/// Checks certificates with the system's verifier, made at the first check.
#[derive(Debug)]
struct LazyVerifier {
    provider: Arc<CryptoProvider>,
}

impl LazyVerifier {
    fn new(provider: Arc<CryptoProvider>) -> Self {
        Self { provider }
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        roots_for(&self.provider)?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    // The handshake's signatures are checked with the provider's algorithms alone: no root is
    // needed for them.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_config_loads_no_roots_until_a_certificate_is_checked() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = client_config(provider.clone()).unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        // The system's roots load when asked for, and hold certificates.
        #[cfg(not(any(target_os = "macos", windows)))]
        assert!(!unix_roots().is_empty(), "this machine has CA certificates");
        assert!(roots_for(&provider).is_ok());
    }
}
