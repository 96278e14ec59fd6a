//! cosign-compatible keyed signatures: found at the tag
//! `sha256-HEX.sig` of the component's repository, each a `simplesigning`
//! payload naming the manifest digest, its ECDSA P-256 signature (DER,
//! base64) in the layer's `dev.cosignproject.cosign/signature` annotation.

use super::{Oci, OciError, Source};
use base64::Engine as _;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _};
use std::collections::BTreeMap;
use std::path::PathBuf;

const SIMPLESIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const ANNOTATION: &str = "dev.cosignproject.cosign/signature";
const KIND: &str = "cosign container image signature";

/// One signature as the registry holds it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Signature {
    /// The signed payload, as it was signed.
    payload: String,
    /// Its signature, base64 of DER.
    signature: String,
}

/// The tag holding the signatures of manifest `digest`.
fn signature_ref(source: &Source, digest: &str) -> Reference {
    Reference::with_tag(
        source.reference.registry().to_owned(),
        source.reference.repository().to_owned(),
        format!("{}.sig", digest.replace(':', "-")),
    )
}

/// The signatures the registry holds for `digest` (none if it holds none).
pub(super) async fn fetch_signatures(
    client: &Client,
    auth: &RegistryAuth,
    source: &Source,
    digest: &str,
) -> Vec<Signature> {
    let at = signature_ref(source, digest);
    let media = [
        OCI_IMAGE_MEDIA_TYPE,
        oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
    ];
    let Ok((bytes, _)) = client.pull_manifest_raw(&at, auth, &media).await else {
        return Vec::new();
    };
    let Ok(manifest) = serde_json::from_slice::<OciImageManifest>(&bytes) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLESIGNING)
    {
        let Some(signature) = layer.annotations.as_ref().and_then(|a| a.get(ANNOTATION)) else {
            continue;
        };
        let mut payload = Vec::new();
        if client.pull_blob(&at, layer, &mut payload).await.is_ok() {
            out.push(Signature {
                payload: String::from_utf8_lossy(&payload).into_owned(),
                signature: signature.clone(),
            });
        }
    }
    out
}

/// The payload cosign signs for manifest `digest` of `source`.
fn payload(source: &Source, digest: &str) -> String {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": format!(
                "{}/{}", source.reference.registry(), source.reference.repository()
            )},
            "image": {"docker-manifest-digest": digest},
            "type": KIND,
        },
        "optional": null,
    })
    .to_string()
}

/// Which of `keys` signed manifest `digest` in one of `signatures`; an
/// error names the digest and every key tried.
pub(super) fn verify(
    signatures: &[Signature],
    digest: &str,
    keys: &[PathBuf],
    source: &Source,
) -> Result<String, OciError> {
    check(signatures, digest, keys, source)?.map_err(|why| {
        let tried: Vec<String> = keys.iter().map(|k| k.display().to_string()).collect();
        OciError::Signature(format!(
            "{} ({digest}) {why}; keys tried: {}. Signatures are required ([signatures] require): \
             sign it (`cosign sign --key`, or `toolhost plugin sign`) or add the publisher's key",
            source.as_str(),
            if tried.is_empty() {
                "none configured".to_owned()
            } else {
                tried.join(", ")
            }
        ))
    })
}

/// Which of `keys` signed manifest `digest` of `source` in one of
/// `signatures` (`Ok(Err(why))`: none did, and why); an error is a key
/// that cannot be read.
pub(super) fn check(
    signatures: &[Signature],
    digest: &str,
    keys: &[PathBuf],
    source: &Source,
) -> Result<Result<String, &'static str>, OciError> {
    if keys.is_empty() {
        return Ok(Err("cannot be checked"));
    }
    if signatures.is_empty() {
        return Ok(Err("has no signature"));
    }
    let mut loaded = Vec::new();
    for path in keys {
        let pem = std::fs::read_to_string(path).map_err(super::io(path))?;
        let key = p256::ecdsa::VerifyingKey::from_public_key_pem(&pem).map_err(|e| {
            OciError::Signature(format!(
                "{} is not a PEM ECDSA P-256 public key (as `cosign generate-key-pair` writes): {e}",
                path.display()
            ))
        })?;
        loaded.push((path, key));
    }
    let repository = format!(
        "{}/{}",
        source.reference.registry(),
        source.reference.repository()
    );
    for signature in signatures {
        let Ok(payload) = serde_json::from_str::<serde_json::Value>(&signature.payload) else {
            continue;
        };
        let critical = &payload["critical"];
        if critical["image"]["docker-manifest-digest"] != digest
            || critical["type"] != KIND
            || critical["identity"]["docker-reference"] != repository.as_str()
        {
            continue;
        }
        let Ok(der) = base64::engine::general_purpose::STANDARD.decode(&signature.signature) else {
            continue;
        };
        let Ok(sig) = p256::ecdsa::DerSignature::from_bytes(&der) else {
            continue;
        };
        for (path, key) in &loaded {
            if key.verify(signature.payload.as_bytes(), &sig).is_ok() {
                return Ok(Ok(path.display().to_string()));
            }
        }
    }
    Ok(Err("has no signature any of these keys made"))
}

/// Sign manifest `digest` of `source` with `key_pem` and push the
/// signature beside it (added to any already there); the signature tag.
pub(super) async fn push_signature(
    oci: &Oci,
    source: &Source,
    digest: &str,
    key_pem: &str,
) -> Result<String, OciError> {
    let key = p256::ecdsa::SigningKey::from_pkcs8_pem(key_pem).map_err(|e| {
        OciError::Signature(format!(
            "not a PEM PKCS#8 ECDSA P-256 private key (`openssl genpkey -algorithm EC -pkeyopt \
             ec_paramgen_curve:P-256` makes one): {e}"
        ))
    })?;
    let payload = payload(source, digest);
    let signature: p256::ecdsa::DerSignature = key.sign(payload.as_bytes());
    let encoded = base64::engine::general_purpose::STANDARD.encode(signature.as_bytes());
    let client = oci.client_for(source);
    let auth = oci.auth(source)?;
    let mut layers: Vec<ImageLayer> = Vec::new();
    for old in fetch_signatures(&client, &auth, source, digest).await {
        let annotations = BTreeMap::from([(ANNOTATION.to_owned(), old.signature)]);
        layers.push(ImageLayer::new(
            old.payload.into_bytes(),
            SIMPLESIGNING.to_owned(),
            Some(annotations),
        ));
    }
    let annotations = BTreeMap::from([(ANNOTATION.to_owned(), encoded)]);
    layers.push(ImageLayer::new(
        payload.into_bytes(),
        SIMPLESIGNING.to_owned(),
        Some(annotations),
    ));
    let config = Config::new(
        b"{}".to_vec(),
        oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE.to_owned(),
        None,
    );
    let at = signature_ref(source, digest);
    client
        .push(&at, &layers, config, &auth, None)
        .await
        .map_err(|e| oci.registry_error(source, &e))?;
    Ok(at.whole())
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::pkcs8::{EncodePublicKey as _, LineEnding};

    /// A signature over `payload` by the key of `seed`, and that key's
    /// public PEM in `dir`.
    fn signed(dir: &std::path::Path, seed: u8, payload: &str) -> (Signature, PathBuf) {
        let key = p256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).unwrap();
        let der: p256::ecdsa::DerSignature = key.sign(payload.as_bytes());
        let public = dir.join(format!("{seed}.pub"));
        let pem = key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        std::fs::write(&public, pem).unwrap();
        let signature = Signature {
            payload: payload.to_owned(),
            signature: base64::engine::general_purpose::STANDARD.encode(der.as_bytes()),
        };
        (signature, public)
    }

    #[test]
    fn a_signature_counts_only_for_its_digest_its_repository_and_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let source = Source::parse("oci://127.0.0.1:5000/tools/echo:1").unwrap();
        let other_repo = Source::parse("oci://127.0.0.1:5000/tools/evilcopy:1").unwrap();
        let digest = "sha256:aa";
        let (good, key) = signed(dir.path(), 7, &payload(&source, digest));
        let keys = [key];
        assert!(verify(std::slice::from_ref(&good), digest, &keys, &source).is_ok());
        // The same signature, for a copy of the digest in another repository.
        let refused = verify(std::slice::from_ref(&good), digest, &keys, &other_repo);
        assert!(
            refused
                .unwrap_err()
                .to_string()
                .contains("no signature any of these keys")
        );
        // Another digest.
        assert!(verify(std::slice::from_ref(&good), "sha256:bb", &keys, &source).is_err());
        // Another key.
        let (_, other_key) = signed(dir.path(), 9, "x");
        assert!(verify(std::slice::from_ref(&good), digest, &[other_key], &source).is_err());
        // A payload changed after signing.
        let mut tampered = good.clone();
        tampered.payload = payload(&source, "sha256:cc");
        assert!(verify(&[tampered], "sha256:cc", &keys, &source).is_err());
        // No signature, no key: refused, saying which.
        let none = verify(&[], digest, &keys, &source).unwrap_err().to_string();
        assert!(
            none.contains("has no signature") && none.contains(digest),
            "{none}"
        );
        let unkeyed = verify(&[good], digest, &[], &source)
            .unwrap_err()
            .to_string();
        assert!(unkeyed.contains("none configured"), "{unkeyed}");
    }
}
