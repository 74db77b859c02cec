//! A throw-away certificate authority and a `localhost` leaf certificate.
//!
//! rustls-based clients refuse a self-signed leaf that is marked `CA:TRUE`,
//! so [`generate`] mints a CA (`CA:TRUE`) and a leaf (`CA:FALSE`) signed by
//! it. Keys are ECDSA P-256, written as PKCS#8 PEM.
//!
//! [`generate_chain`] adds intermediate CAs between the root and the leaf,
//! as the interop runner's `amplificationlimit` case does to make the
//! server's first flight large; those use RSA-2048 keys so that a 9-long
//! chain exceeds the runner's 7,500 bytes of Handshake data.

use std::fs;
use std::path::{Path, PathBuf};

use boring::asn1::Asn1Time;
use boring::bn::{BigNum, MsbOption};
use boring::ec::{EcGroup, EcKey};
use boring::hash::MessageDigest;
use boring::nid::Nid;
use boring::pkey::{PKey, Private};
use boring::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use boring::x509::{X509Name, X509NameBuilder, X509Ref, X509};

/// Validity of generated certificates, in days from now.
const VALID_DAYS: u32 = 3650;

/// Where [`generate`] wrote its files.
#[derive(Debug, Clone)]
pub struct CertPaths {
    /// The CA certificate (`ca.pem`): give it to clients as trust anchor.
    pub ca_cert: PathBuf,
    /// The CA private key (`ca.key`).
    pub ca_key: PathBuf,
    /// The leaf certificate (`cert.pem`) for the server.
    pub cert: PathBuf,
    /// The leaf private key (`key.pem`, PKCS#8) for the server.
    pub key: PathBuf,
}

/// Longest chain [`generate_chain`] writes.
pub const MAX_CHAIN: usize = 16;

/// Creates `dir` if needed and writes `ca.pem`, `ca.key`, `cert.pem` and
/// `key.pem` into it.
pub fn generate(dir: &Path) -> Result<CertPaths, String> {
    generate_chain(dir, 1)
}

/// Like [`generate`], but `cert.pem` holds a chain of `len` certificates:
/// the leaf, then `len - 1` intermediate CAs, the last one signed by the
/// root in `ca.pem` (`len` = 1: the leaf alone, signed by the root).
pub fn generate_chain(dir: &Path, len: usize) -> Result<CertPaths, String> {
    if !(1..=MAX_CHAIN).contains(&len) {
        return Err(format!("chain length must be in 1..={MAX_CHAIN}"));
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;

    let ca_key = new_key()?;
    let ca = build_ca(&ca_key).map_err(tls_err)?;
    // Intermediates from the root down: (cert, key) of each issuer.
    let mut chain: Vec<X509> = Vec::new();
    let (mut issuer, mut issuer_key) = (ca.clone(), ca_key.clone());
    for i in (1..len).rev() {
        let key = rsa_key()?;
        let cert = build_intermediate(i, &key, &issuer, &issuer_key).map_err(tls_err)?;
        chain.push(cert.clone());
        (issuer, issuer_key) = (cert, key);
    }
    let leaf_key = new_key()?;
    let leaf = build_leaf(&leaf_key, &issuer, &issuer_key).map_err(tls_err)?;

    let paths = CertPaths {
        ca_cert: dir.join("ca.pem"),
        ca_key: dir.join("ca.key"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    write(&paths.ca_cert, &ca.to_pem().map_err(tls_err)?)?;
    write(
        &paths.ca_key,
        &ca_key.private_key_to_pem_pkcs8().map_err(tls_err)?,
    )?;
    let mut pem = leaf.to_pem().map_err(tls_err)?;
    for c in chain.iter().rev() {
        pem.extend(c.to_pem().map_err(tls_err)?);
    }
    write(&paths.cert, &pem)?;
    write(
        &paths.key,
        &leaf_key.private_key_to_pem_pkcs8().map_err(tls_err)?,
    )?;
    Ok(paths)
}

fn tls_err(e: boring::error::ErrorStack) -> String {
    format!("certificate generation failed: {e}")
}

fn write(path: &Path, data: &[u8]) -> Result<(), String> {
    fs::write(path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn new_key() -> Result<PKey<Private>, String> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).map_err(tls_err)?;
    let ec = EcKey::generate(&group).map_err(tls_err)?;
    PKey::from_ec_key(ec).map_err(tls_err)
}

fn rsa_key() -> Result<PKey<Private>, String> {
    let rsa = boring::rsa::Rsa::generate(2048).map_err(tls_err)?;
    PKey::from_rsa(rsa).map_err(tls_err)
}

fn name(common_name: &str) -> Result<X509Name, boring::error::ErrorStack> {
    let mut b = X509NameBuilder::new()?;
    b.append_entry_by_text("O", "QUIC-NC test")?;
    b.append_entry_by_text("CN", common_name)?;
    Ok(b.build())
}

/// Starts a builder with version, random serial, validity, subject and key.
fn base(
    subject: &X509Name,
    key: &PKey<Private>,
) -> Result<boring::x509::X509Builder, boring::error::ErrorStack> {
    let mut b = X509::builder()?;
    b.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    // Back-date by a day so small clock differences never matter.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let not_before = now.saturating_sub(86_400);
    let not_before = Asn1Time::from_unix(not_before as _)?;
    let not_after = Asn1Time::days_from_now(VALID_DAYS)?;
    b.set_not_before(&not_before)?;
    b.set_not_after(&not_after)?;
    b.set_subject_name(subject)?;
    b.set_pubkey(key)?;
    Ok(b)
}

fn build_ca(key: &PKey<Private>) -> Result<X509, boring::error::ErrorStack> {
    let subject = name("QUIC-NC test CA")?;
    let mut b = base(&subject, key)?;
    b.set_issuer_name(&subject)?;
    ca_constraints(&mut b)?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
    b.append_extension(&ski)?;
    b.sign(key, MessageDigest::sha256())?;
    Ok(b.build())
}

/// Marks a certificate as a CA that signs certificates and CRLs.
fn ca_constraints(b: &mut boring::x509::X509Builder) -> Result<(), boring::error::ErrorStack> {
    let bc = BasicConstraints::new().critical().ca().build()?;
    b.append_extension(&bc)?;
    let ku = KeyUsage::new()
        .critical()
        .key_cert_sign()
        .crl_sign()
        .build()?;
    b.append_extension(&ku)
}

/// Intermediate CA number `i` (1 = the one that signs the leaf).
fn build_intermediate(
    i: usize,
    key: &PKey<Private>,
    issuer: &X509Ref,
    issuer_key: &PKey<Private>,
) -> Result<X509, boring::error::ErrorStack> {
    let subject = name(&format!("QUIC-NC test intermediate CA {i}"))?;
    let mut b = base(&subject, key)?;
    b.set_issuer_name(issuer.subject_name())?;
    ca_constraints(&mut b)?;
    signed_by(b, issuer, issuer_key)
}

fn build_leaf(
    key: &PKey<Private>,
    ca: &X509Ref,
    ca_key: &PKey<Private>,
) -> Result<X509, boring::error::ErrorStack> {
    let subject = name("localhost")?;
    let mut b = base(&subject, key)?;
    b.set_issuer_name(ca.subject_name())?;
    let bc = BasicConstraints::new().critical().build()?;
    b.append_extension(&bc)?;
    let ku = KeyUsage::new().critical().digital_signature().build()?;
    b.append_extension(&ku)?;
    let eku = ExtendedKeyUsage::new().server_auth().build()?;
    b.append_extension(&eku)?;
    let san = SubjectAlternativeName::new()
        .dns("localhost")
        .ip("127.0.0.1")
        .ip("::1")
        .build(&b.x509v3_context(Some(ca), None))?;
    b.append_extension(&san)?;
    signed_by(b, ca, ca_key)
}

/// Adds the subject and authority key identifiers and signs with the
/// issuer's key.
fn signed_by(
    mut b: boring::x509::X509Builder,
    issuer: &X509Ref,
    issuer_key: &PKey<Private>,
) -> Result<X509, boring::error::ErrorStack> {
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(Some(issuer), None))?;
    b.append_extension(&ski)?;
    let aki = AuthorityKeyIdentifier::new()
        .keyid(true)
        .build(&b.x509v3_context(Some(issuer), None))?;
    b.append_extension(&aki)?;
    b.sign(issuer_key, MessageDigest::sha256())?;
    Ok(b.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_ca_and_a_leaf_signed_by_it() {
        let dir = std::env::temp_dir().join(format!("qnc-certs-unit-{}", std::process::id()));
        let paths = generate(&dir).expect("generate");
        let ca = X509::from_pem(&fs::read(&paths.ca_cert).unwrap()).unwrap();
        let leaf = X509::from_pem(&fs::read(&paths.cert).unwrap()).unwrap();
        let ca_pub = ca.public_key().unwrap();
        assert!(leaf.verify(&ca_pub).unwrap(), "leaf signed by CA");
        assert!(ca.verify(&ca_pub).unwrap(), "CA self-signed");
        let key = fs::read_to_string(&paths.key).unwrap();
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "PKCS#8");
        assert!(paths.ca_key.exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_chain_of_nine_verifies_link_by_link_and_is_large() {
        let dir = std::env::temp_dir().join(format!("qnc-certs-chain-{}", std::process::id()));
        let paths = generate_chain(&dir, 9).expect("generate");
        let pem = fs::read(&paths.cert).unwrap();
        let chain = X509::stack_from_pem(&pem).unwrap();
        assert_eq!(chain.len(), 9);
        let ca = X509::from_pem(&fs::read(&paths.ca_cert).unwrap()).unwrap();
        for w in chain.windows(2) {
            assert!(w[0].verify(&w[1].public_key().unwrap()).unwrap());
        }
        assert!(chain[8].verify(&ca.public_key().unwrap()).unwrap());
        let der: usize = chain.iter().map(|c| c.to_der().unwrap().len()).sum();
        assert!(der > 7_500, "{der} bytes of certificates");
        assert!(generate_chain(&dir, 0).is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
