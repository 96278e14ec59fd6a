//! Components fetched for a person to review (`load_component`): fetched
//! and kept as any pulled component, but never pinned by the agent that
//! asked (the lock is the person's: `toolhost plugin pull` pins), and
//! shown with what their signatures say.

use super::{Oci, OciError, Pinned, Source, sign};

/// A component fetched for review.
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// The component's bytes.
    pub wasm: Vec<u8>,
    /// The source by digest: `oci://REGISTRY/REPOSITORY@sha256:…`.
    pub by_digest: String,
    /// What its signatures say ([`Oci::signature_for`]).
    pub signature: String,
}

impl Oci {
    /// Fetch `source` for review: by its pinned digest if the lock pins it
    /// (wherever its tag points now), else by its tag now, without pinning
    /// it; from the registry each time, so the signatures are today's (the
    /// copy kept here is used when the registry cannot be reached). With
    /// `require_signature`, a component no configured key signed is
    /// refused here, before anyone is asked.
    pub fn fetch_for_review(&self, source: &str) -> Result<Reviewed, OciError> {
        let parsed = Source::parse(source)?;
        let pinned = self.lock()?.get(parsed.as_str()).cloned();
        let at = match &pinned {
            Some(p) => parsed.reference.clone_with_digest(p.digest.clone()),
            None => parsed.reference.clone(),
        };
        let digest = match super::block_on(self.fetch(&parsed, &at, pinned.as_ref(), false)) {
            Ok(Ok(digest)) => digest,
            Ok(Err(failed)) | Err(failed) => match &pinned {
                Some(p) if self.kept(&parsed, p).is_ok() => p.digest.clone(),
                _ => return Err(failed),
            },
        };
        let pinned = Pinned {
            source: parsed.as_str().to_owned(),
            digest,
        };
        let pulled = self.kept(&parsed, &pinned)?;
        let path = pulled.dir.join(parsed.file_name());
        let wasm = std::fs::read(&path).map_err(super::io(&path))?;
        let by_digest = by_digest(&parsed, &pulled.pinned.digest);
        let signature = self.signature_for(&by_digest, &wasm);
        Ok(Reviewed {
            wasm,
            by_digest,
            signature,
        })
    }

    /// What the signatures of `by_digest` (`oci://…@sha256:…`, as
    /// [`Reviewed::by_digest`] names it) say about `wasm`, checked now,
    /// offline, with the configured keys against the copy this machine
    /// keeps: `signed by KEY`, or why not. Nothing is taken from whoever
    /// wrote `by_digest`: a component that is not the kept one is "not
    /// the component kept for …".
    pub fn signature_for(&self, by_digest: &str, wasm: &[u8]) -> String {
        match self.check_kept(by_digest, wasm) {
            Ok(Ok(key)) => format!("signed by {key}"),
            Ok(Err(why)) => format!("not verified: it {why}"),
            Err(e) => format!("not verified: {e}"),
        }
    }

    fn check_kept(
        &self,
        by_digest: &str,
        wasm: &[u8],
    ) -> Result<Result<String, &'static str>, OciError> {
        let source = Source::parse(by_digest)?;
        let digest = source
            .reference
            .digest()
            .ok_or_else(|| OciError::BadSource(by_digest.to_owned()))?
            .to_owned();
        let pinned = Pinned {
            source: by_digest.to_owned(),
            digest: digest.clone(),
        };
        // The whole chain, digest → manifest → layer → bytes, as at a load.
        let kept = Oci::new(super::Options {
            require_signature: false,
            ..self.options.clone()
        })
        .kept(&source, &pinned)?;
        let path = kept.dir.join(source.file_name());
        let bytes = std::fs::read(&path).map_err(super::io(&path))?;
        if bytes != wasm {
            return Err(OciError::Integrity(format!(
                "this is not the component kept for {by_digest}"
            )));
        }
        let signatures: Vec<sign::Signature> = serde_json::from_slice(
            &std::fs::read(kept.dir.join("signatures.json")).unwrap_or_default(),
        )
        .unwrap_or_default();
        sign::check(&signatures, &digest, &self.options.keys, &source)
    }
}

/// `source` named by its manifest `digest`.
fn by_digest(source: &Source, digest: &str) -> String {
    format!(
        "oci://{}/{}@{digest}",
        source.reference.registry(),
        source.reference.repository()
    )
}
