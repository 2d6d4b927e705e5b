//! The engine kinds, in a leaf module: the subgraph definition (`def.rs`)
//! and the per-engine json (`engine.rs`) both name engines, and the engine
//! json reads the definition, so the type sits below both of them.

/// `al_hal_tpb_eng_type`: the fixed engine order PE, ACT, POOL, DVE, SP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineType {
    Pe = 0,
    Act = 1,
    Pool = 2,
    Dve = 3,
    Sp = 4,
}

impl EngineType {
    pub const ALL: [EngineType; 5] = [
        EngineType::Pe,
        EngineType::Act,
        EngineType::Pool,
        EngineType::Dve,
        EngineType::Sp,
    ];

    /// The def.json key (and `dma_queue.owner` value).
    pub fn key(self) -> &'static str {
        match self {
            EngineType::Pe => "pe",
            EngineType::Act => "act",
            EngineType::Pool => "pool",
            EngineType::Dve => "dve",
            EngineType::Sp => "sp",
        }
    }

    pub fn from_key(s: &str) -> Option<EngineType> {
        EngineType::ALL.into_iter().find(|e| e.key() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}
