//! Staging is a transaction: what a load has put on the device belongs to a
//! guard until the load commits, and the guard puts it back when it is
//! dropped uncommitted — on an error return and on a panic alike, on the
//! caller's thread and on a fan-out thread.
//!
//! A [`CoreGuard`] holds one subgraph's image on its core as it grows: the
//! plan's allocations and scratchpad references, the build's allocations,
//! and the core's model-table entry. [`Staged`] holds every core of a load;
//! the runtime commits it only when it registers the model. Whatever fails
//! (or panics) before that, the device ledger, the scratchpad tables and the
//! model tables are left exactly as before the load.

use crate::device::{Device, MemHandle};
use crate::ids::{HModel, PCore};

use super::core::CoreImage;
use super::plan::{self, CorePlan};
use super::{Cores, StageError};

/// One subgraph's image on its core, owned until committed.
pub struct CoreGuard<'d> {
    dev: &'d dyn Device,
    cores: &'d Cores,
    /// `None` only once committed.
    image: Option<CoreImage>,
    /// Whether the image's `h_model` is in the core's model table.
    in_table: bool,
}

impl<'d> CoreGuard<'d> {
    /// An empty image of `subgraph` under `h_model` on `plan`'s core; the
    /// plan may already hold allocations and scratchpad references, which the
    /// guard now owns.
    pub fn new(
        dev: &'d dyn Device,
        cores: &'d Cores,
        subgraph: &str,
        h_model: HModel,
        plan: CorePlan,
    ) -> CoreGuard<'d> {
        CoreGuard {
            dev,
            cores,
            image: Some(CoreImage {
                subgraph: subgraph.to_string(),
                h_model,
                plan,
                rings: Vec::new(),
                tables: Vec::new(),
                engines: Vec::new(),
                allocs: Vec::new(),
                reloc_time: std::time::Duration::ZERO,
            }),
            in_table: false,
        }
    }

    pub fn pcore(&self) -> PCore {
        self.image().plan.pcore
    }

    /// The image so far.
    pub fn image(&self) -> &CoreImage {
        self.image.as_ref().expect("only commit takes the image")
    }

    /// The image, to grow. Every allocation a build makes goes into
    /// `allocs` (or the plan's `allocs`) as soon as the device returns it.
    pub fn image_mut(&mut self) -> &mut CoreImage {
        self.image.as_mut().expect("only commit takes the image")
    }

    /// Enters the image's `H_MODEL` in its core's model table (the last
    /// step of a core's build).
    pub fn enter_model_table(&mut self) -> Result<(), StageError> {
        let h = self.image().h_model;
        if self.in_table || !self.cores.lock(self.pcore()).models.insert(h) {
            return Err(StageError::ModelInDb(h.0));
        }
        self.in_table = true;
        Ok(())
    }

    /// Keeps the image: from now on only [`unstage`] removes it.
    pub fn commit(mut self) -> CoreImage {
        self.image.take().expect("only commit takes the image")
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        if let Some(img) = &self.image {
            release(self.dev, self.cores, img, self.in_table);
        }
    }
}

/// Every core of one load, owned until the runtime registers the model.
pub struct Staged<'d> {
    dev: &'d dyn Device,
    cores: &'d Cores,
    /// Finished images, in subgraph order; each entered in its model table.
    images: Vec<CoreImage>,
}

impl<'d> Staged<'d> {
    /// Takes over finished cores from their guards.
    pub(super) fn new(
        dev: &'d dyn Device,
        cores: &'d Cores,
        built: Vec<CoreGuard<'d>>,
    ) -> Staged<'d> {
        debug_assert!(built.iter().all(|g| g.in_table));
        Staged {
            dev,
            cores,
            images: built.into_iter().map(CoreGuard::commit).collect(),
        }
    }

    /// The staged images, one per core in subgraph order.
    pub fn images(&self) -> &[CoreImage] {
        &self.images
    }

    /// Keeps every image (the load's commit point).
    pub fn commit(mut self) -> Vec<CoreImage> {
        std::mem::take(&mut self.images)
    }
}

impl std::fmt::Debug for Staged<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged")
            .field("images", &self.images)
            .finish_non_exhaustive()
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        for img in self.images.drain(..).rev() {
            unstage(self.dev, self.cores, img);
        }
    }
}

/// Removes a committed subgraph from its core (`kbl_model_remove` +
/// `model_free`): the model-table entry, every allocation, the scratchpad
/// references.
pub fn unstage(dev: &dyn Device, cores: &Cores, img: CoreImage) {
    release(dev, cores, &img, true);
}

/// What dropping a guard and unstaging both do, in the reverse order of
/// staging: the model-table entry, the build's allocations, then the plan.
fn release(dev: &dyn Device, cores: &Cores, img: &CoreImage, in_table: bool) {
    if in_table {
        cores.lock(img.pcore()).models.remove(&img.h_model);
    }
    for &h in img.allocs.iter().rev() {
        free(dev, h, &img.subgraph);
    }
    plan::release(dev, cores, &img.plan);
}

/// Frees one allocation; a failure is logged, as nothing can be done about
/// it at teardown.
fn free(dev: &dyn Device, h: MemHandle, of: &str) {
    if let Err(e) = dev.free(h) {
        tracing::warn!("freeing {h} of {of}: {e}");
    }
}
