//! The engine kinds, in a leaf module: the subgraph definition (`def.rs`)
//! and the per-engine json (`engine.rs`) both name engines, and the engine
//! json reads the definition, so the type sits below both of them.

/// `al_hal_tpb_eng_type`: the fixed engine order PE, ACT, POOL, DVE, SP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineType {
    /// The PE (tensor) engine.
    Pe = 0,
    /// The activation engine.
    Act = 1,
    /// The pool engine.
    Pool = 2,
    /// The vector engine (DVE).
    Dve = 3,
    /// The SP engine.
    Sp = 4,
}

impl EngineType {
    /// Every engine, in the hardware's order.
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

    /// The engine a def.json key names (`pe`, `act`, …).
    pub fn from_key(s: &str) -> Option<EngineType> {
        EngineType::ALL.into_iter().find(|e| e.key() == s)
    }

    /// Its position in the hardware's order (and in [`EngineType::ALL`]).
    pub fn index(self) -> usize {
        self as usize
    }
}
