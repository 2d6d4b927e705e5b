//! Typed ids, so a variable id is never confused with a core index or an address.

use std::fmt;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident($inner:ty), $fmt:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, $fmt, self.0)
            }
        }
    };
}

id_type!(
    /// A variable id inside one subgraph's `def.json` (dense `0..n`).
    VarId(u32), "var{}"
);
id_type!(
    /// A physical NeuronCore index on the device.
    PCore(u32), "nc{}"
);
id_type!(
    /// A logical NeuronCore index (what `nrt_load` calls `vnc`).
    LCore(u32), "vnc{}"
);
id_type!(
    /// A device physical address.
    Pa(u64), "{:#x}"
);
id_type!(
    /// The registry handle of a loaded model (`H_NN`).
    HNn(u32), "nn{}"
);
id_type!(
    /// The per-core model-table handle shared by a load's subgraphs (`H_MODEL`).
    HModel(u32), "model{}"
);
id_type!(
    /// The generation of a runtime: unique in the process, carried by every
    /// model handle the runtime gives out.
    RuntimeGen(u64), "runtime{}"
);
