//! The allocation-site tables of format v2 (docs/trace-format.md, "Allocation sites"):
//! `allocations` (one row per recorded allocation), `stacks` (each distinct call stack as
//! its frame list), `frames` (function, file:line, inlined flag, and the module + offset
//! that finds the same code in another run) and `modules` (path, GNU build id).
//!
//! Model, Arrow columns and the reader's conversion back live here, apart from the eight v1
//! tables, so that the writer and reader only delegate to [`columns`] and [`from_batches`].

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field};

use super::columns::{
    col_dict, col_f64, col_i16, col_i32, col_i64, col_i8, col_str, col_u16, col_u32, col_u64, dict8, DictColumn,
};
use super::TraceError;

/// The four allocation-site tables, in the order they are written.
pub const ALLOC_TABLE_NAMES: [&str; 4] = ["allocations", "stacks", "frames", "modules"];

/// Most `allocations` rows one trace holds (the recorder keeps the allocations recorded by
/// threshold first, largest first, then sampled ones; the manifest notes say how many were left).
pub const MAX_ALLOCATIONS: usize = 1_000_000;
/// Most `stacks` rows (frames over all distinct stacks); a stack past it is stored as -1.
pub const MAX_STACK_ROWS: usize = 4_000_000;
/// Most `frames` rows.
pub const MAX_FRAMES: usize = 1_000_000;
/// Most `modules` rows.
pub const MAX_MODULES: usize = 65_536;

/// `allocations.op` values (the shim's interposed calls that start a block or mapping).
pub const ALLOC_OPS: [&str; 12] = [
    "malloc",
    "calloc",
    "realloc",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "reallocarray",
    "mmap",
    "mremap",
    "unknown",
];
/// `allocations.end_op` values.
pub const ALLOC_END_OPS: [&str; 7] = ["none", "free", "realloc", "reallocarray", "munmap", "mremap", "unknown"];

/// `allocations`: one row per allocation the shim recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocations {
    pub time_us: Vec<i64>,
    /// When it was freed, unmapped or reallocated away; -1 not seen.
    pub end_us: Vec<i64>,
    /// Row of `threads`, -1 when the allocating thread is not in that table.
    pub thread: Vec<i32>,
    pub tid: Vec<i32>,
    pub op: DictColumn,
    pub end_op: DictColumn,
    pub address: Vec<u64>,
    pub size: Vec<u64>,
    /// 1: picked by the byte sampler (below the threshold), 0: recorded by threshold.
    pub sampled: Vec<i8>,
    pub weight_bytes: Vec<f64>,
    /// Stack id of `stacks`, -1 none.
    pub stack: Vec<i32>,
    /// Row of `frames`: the innermost frame outside allocator and language runtimes, -1 unknown.
    pub site: Vec<i32>,
    /// Row of `regions` containing `address`, -1 unknown.
    pub region: Vec<i32>,
}

/// `stacks`: stack `stack` is its rows in `depth` order (0 = innermost, the allocation call).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocStacks {
    pub stack: Vec<u32>,
    pub depth: Vec<u16>,
    pub frame: Vec<u32>,
}

/// `frames`: one row per (code address, inlined function).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocFrames {
    /// Row of `modules`, -1 when no module covered the address.
    pub module: Vec<i32>,
    /// Address in the module's ELF file (runtime address minus load bias): the same in every run
    /// of the same build, whatever the address-space layout. The raw address when `module` is -1.
    pub module_offset: Vec<u64>,
    pub function: Vec<Option<String>>,
    /// Bytes from the start of `function`; -1 unknown (and for inlined frames).
    pub function_offset: Vec<i64>,
    pub file: Vec<Option<String>>,
    /// -1 unknown.
    pub line: Vec<i32>,
    /// -1 unknown.
    pub col: Vec<i16>,
    /// 1: inlined into the next outer frame of the same code address.
    pub inlined: Vec<i8>,
}

/// `modules`: the executable and the shared objects code addresses fell in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocModules {
    pub path: Vec<String>,
    /// GNU build id, lower-case hex, empty when the module has none.
    pub build_id: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocTables {
    pub allocations: Allocations,
    pub stacks: AllocStacks,
    pub frames: AllocFrames,
    pub modules: AllocModules,
}

impl AllocTables {
    /// Rows of one of the four tables.
    pub fn rows(&self, table: &str) -> usize {
        match table {
            "allocations" => self.allocations.time_us.len(),
            "stacks" => self.stacks.stack.len(),
            "frames" => self.frames.module.len(),
            "modules" => self.modules.path.len(),
            _ => 0,
        }
    }

    /// Number of distinct stacks (stack ids are 0..n).
    pub fn stack_count(&self) -> usize {
        self.stacks.stack.last().map_or(0, |&s| s as usize + 1)
    }

    /// The frames of stack `s`, innermost first.
    pub fn stack_frames(&self, s: u32) -> Vec<u32> {
        let st = &self.stacks.stack;
        let from = st.partition_point(|&x| x < s);
        let to = st.partition_point(|&x| x <= s);
        self.stacks.frame[from..to].to_vec()
    }

    /// `function file:line` of a frame (`function+0x1f (module)` without line information).
    pub fn describe_frame(&self, f: usize) -> String {
        let fr = &self.frames;
        let module = usize::try_from(fr.module[f])
            .ok()
            .and_then(|m| self.modules.path.get(m))
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
        let func = fr.function[f].clone();
        match (&fr.file[f], fr.line[f]) {
            (Some(file), line) if line >= 0 => {
                let short = file.rsplit('/').next().unwrap_or(file);
                format!("{} {short}:{line}", func.as_deref().unwrap_or("?"))
            }
            _ => match (func, fr.function_offset[f]) {
                (Some(name), off) if off >= 0 => {
                    format!("{name}+{off:#x}{}", module.map(|m| format!(" ({m})")).unwrap_or_default())
                }
                (Some(name), _) => format!("{name}{}", module.map(|m| format!(" ({m})")).unwrap_or_default()),
                (None, _) => format!("{}+{:#x}", module.unwrap_or_else(|| "?".into()), fr.module_offset[f]),
            },
        }
    }
}

fn same_len(table: &str, lens: &[usize]) -> Result<(), TraceError> {
    if lens.iter().any(|&l| l != lens[0]) {
        return Err(TraceError::Invalid(format!("{table}: columns of different lengths {lens:?}")));
    }
    Ok(())
}

fn opt_strings(v: &[Option<String>]) -> ArrayRef {
    Arc::new(StringArray::from(v.iter().map(|p| p.as_deref()).collect::<Vec<_>>()))
}

/// The Arrow columns of one allocation-site table; None for another table name.
pub fn columns(t: &AllocTables, table: &str) -> Option<Result<Vec<ArrayRef>, TraceError>> {
    let cols = || -> Result<Vec<ArrayRef>, TraceError> {
        Ok(match table {
            "allocations" => {
                let a = &t.allocations;
                same_len(
                    table,
                    &[
                        a.time_us.len(),
                        a.end_us.len(),
                        a.thread.len(),
                        a.tid.len(),
                        a.op.len(),
                        a.end_op.len(),
                        a.address.len(),
                        a.size.len(),
                        a.sampled.len(),
                        a.weight_bytes.len(),
                        a.stack.len(),
                        a.site.len(),
                        a.region.len(),
                    ],
                )?;
                vec![
                    Arc::new(Int64Array::from(a.time_us.clone())),
                    Arc::new(Int64Array::from(a.end_us.clone())),
                    Arc::new(Int32Array::from(a.thread.clone())),
                    Arc::new(Int32Array::from(a.tid.clone())),
                    dict8(&a.op, table, "op")?,
                    dict8(&a.end_op, table, "end_op")?,
                    Arc::new(UInt64Array::from(a.address.clone())),
                    Arc::new(UInt64Array::from(a.size.clone())),
                    Arc::new(Int8Array::from(a.sampled.clone())),
                    Arc::new(Float64Array::from(a.weight_bytes.clone())),
                    Arc::new(Int32Array::from(a.stack.clone())),
                    Arc::new(Int32Array::from(a.site.clone())),
                    Arc::new(Int32Array::from(a.region.clone())),
                ]
            }
            "stacks" => {
                let s = &t.stacks;
                same_len(table, &[s.stack.len(), s.depth.len(), s.frame.len()])?;
                vec![
                    Arc::new(UInt32Array::from(s.stack.clone())),
                    Arc::new(UInt16Array::from(s.depth.clone())),
                    Arc::new(UInt32Array::from(s.frame.clone())),
                ]
            }
            "frames" => {
                let f = &t.frames;
                same_len(
                    table,
                    &[
                        f.module.len(),
                        f.module_offset.len(),
                        f.function.len(),
                        f.function_offset.len(),
                        f.file.len(),
                        f.line.len(),
                        f.col.len(),
                        f.inlined.len(),
                    ],
                )?;
                vec![
                    Arc::new(Int32Array::from(f.module.clone())),
                    Arc::new(UInt64Array::from(f.module_offset.clone())),
                    opt_strings(&f.function),
                    Arc::new(Int64Array::from(f.function_offset.clone())),
                    opt_strings(&f.file),
                    Arc::new(Int32Array::from(f.line.clone())),
                    Arc::new(Int16Array::from(f.col.clone())),
                    Arc::new(Int8Array::from(f.inlined.clone())),
                ]
            }
            "modules" => {
                let m = &t.modules;
                same_len(table, &[m.path.len(), m.build_id.len()])?;
                vec![
                    Arc::new(StringArray::from_iter_values(m.path.iter())),
                    Arc::new(StringArray::from_iter_values(m.build_id.iter())),
                ]
            }
            _ => unreachable!(),
        })
    };
    ALLOC_TABLE_NAMES.contains(&table).then(cols)
}

/// The Arrow fields of one allocation-site table; None for another table name.
pub fn fields(table: &str) -> Option<Vec<Field>> {
    use DataType::*;
    let f = |name: &str, ty: DataType| Field::new(name, ty, false);
    let nullable = |name: &str, ty: DataType| Field::new(name, ty, true);
    let dict8 = || DataType::Dictionary(Box::new(Int8), Box::new(Utf8));
    Some(match table {
        "allocations" => vec![
            f("time_us", Int64),
            f("end_us", Int64),
            f("thread", Int32),
            f("tid", Int32),
            f("op", dict8()),
            f("end_op", dict8()),
            f("address", UInt64),
            f("size", UInt64),
            f("sampled", Int8),
            f("weight_bytes", Float64),
            f("stack", Int32),
            f("site", Int32),
            f("region", Int32),
        ],
        "stacks" => vec![f("stack", UInt32), f("depth", UInt16), f("frame", UInt32)],
        "frames" => vec![
            f("module", Int32),
            f("module_offset", UInt64),
            nullable("function", Utf8),
            f("function_offset", Int64),
            nullable("file", Utf8),
            f("line", Int32),
            f("col", Int16),
            f("inlined", Int8),
        ],
        "modules" => vec![f("path", Utf8), f("build_id", Utf8)],
        _ => return None,
    })
}

/// The tables back from record batches (the reader); a missing table (a v1 file) is empty.
pub fn from_batches(get: impl Fn(&str) -> Option<RecordBatch>) -> AllocTables {
    let mut t = AllocTables::default();
    if let Some(b) = get("allocations") {
        t.allocations = Allocations {
            time_us: col_i64(&b, "time_us"),
            end_us: col_i64(&b, "end_us"),
            thread: col_i32(&b, "thread"),
            tid: col_i32(&b, "tid"),
            op: col_dict(&b, "op"),
            end_op: col_dict(&b, "end_op"),
            address: col_u64(&b, "address"),
            size: col_u64(&b, "size"),
            sampled: col_i8(&b, "sampled"),
            weight_bytes: col_f64(&b, "weight_bytes"),
            stack: col_i32(&b, "stack"),
            site: col_i32(&b, "site"),
            region: col_i32(&b, "region"),
        };
    }
    if let Some(b) = get("stacks") {
        t.stacks =
            AllocStacks { stack: col_u32(&b, "stack"), depth: col_u16(&b, "depth"), frame: col_u32(&b, "frame") };
    }
    if let Some(b) = get("frames") {
        t.frames = AllocFrames {
            module: col_i32(&b, "module"),
            module_offset: col_u64(&b, "module_offset"),
            function: col_str(&b, "function"),
            function_offset: col_i64(&b, "function_offset"),
            file: col_str(&b, "file"),
            line: col_i32(&b, "line"),
            col: col_i16(&b, "col"),
            inlined: col_i8(&b, "inlined"),
        };
    }
    if let Some(b) = get("modules") {
        t.modules = AllocModules {
            path: col_str(&b, "path").into_iter().map(|s| s.unwrap_or_default()).collect(),
            build_id: col_str(&b, "build_id").into_iter().map(|s| s.unwrap_or_default()).collect(),
        };
    }
    t
}
