//! `cudist schema`: the JSON Schema of every `--json` output (and of doctor's `--host`
//! profile), generated from the Rust types that produce them, so the schema cannot describe
//! something the code does not write. The same files are committed under `docs/schema/`; a test
//! regenerates them and fails on drift, and validates real outputs against them with an
//! independent validator (Python `jsonschema`).
//!
//! The generated schemas are made strict where the types are: an object lists every property it
//! may have (`additionalProperties: false`), so an output that grows a field outside its type
//! fails validation instead of passing unnoticed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::util::outln;

#[derive(clap::Args)]
pub struct SchemaArgs {
    /// The output whose schema to print: `inspect`, `repair`, `doctor`, `relink`, `split`,
    /// `toolkit`, `toolkit.env`, `catalog`, `self-check`, `slim`, `select`, or `host` (doctor's `--host` profile,
    /// an input). Without it, the list of names.
    #[arg(value_name = "NAME", value_parser = NAMES)]
    pub name: Option<String>,
    /// Write every schema to DIR/<name>.json (as committed under docs/schema/).
    #[arg(long, value_name = "DIR", conflicts_with = "name")]
    pub write: Option<PathBuf>,
}

/// The names of the schemas, in the order `cudist schema` lists them.
pub const NAMES: [&str; 12] = [
    "inspect",
    "repair",
    "doctor",
    "relink",
    "split",
    "toolkit",
    "toolkit.env",
    "catalog",
    "self-check",
    "slim",
    "select",
    "host",
];

/// One document cudist writes (or, for `host`, reads), with its schema.
pub struct Output {
    /// The file stem under docs/schema/ and the NAME argument.
    pub name: &'static str,
    /// The value of the document's `schema` field (`cudist.inspect/2`); for inputs without
    /// one, a descriptive identifier.
    pub id: &'static str,
    pub schema: Value,
}

/// Whether a schema describes what cudist writes (`--json` outputs) or what it reads.
#[derive(Clone, Copy)]
pub enum Contract {
    Writes,
    Reads,
}

/// The schema of `T` as a standalone JSON Schema (draft 2020-12) document with `$id` and
/// `title`; for outputs, the `schema` field is pinned to `id`.
pub fn of<T: JsonSchema>(name: &'static str, id: &'static str, contract: Contract) -> Output {
    let settings = SchemaSettings::draft2020_12();
    let settings = match contract {
        Contract::Writes => settings.for_serialize(),
        Contract::Reads => settings.for_deserialize(),
    };
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    strict(&mut schema);
    if let Some(obj) = schema.as_object_mut() {
        let desc = obj.remove("description");
        obj.remove("title");
        let mut head = Map::new();
        head.insert(
            "$schema".into(),
            obj.remove("$schema").unwrap_or(Value::Null),
        );
        head.insert(
            "$id".into(),
            Value::from(format!("https://cudist.invalid/schema/{name}.json")),
        );
        head.insert("title".into(), Value::from(id));
        if let Some(d) = desc {
            head.insert("description".into(), d);
        }
        head.extend(std::mem::take(obj));
        *obj = head;
        if matches!(contract, Contract::Writes) {
            if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
                if props.contains_key("schema") {
                    props.insert("schema".into(), serde_json::json!({ "const": id }));
                }
            }
        }
    }
    Output { name, id, schema }
}

/// Every object schema that names its properties allows no others. Maps (schemas with
/// `additionalProperties` of their own) and untyped values are left as they are.
fn strict(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if obj.contains_key("properties")
                && !obj.contains_key("additionalProperties")
                && !obj.contains_key("unevaluatedProperties")
            {
                obj.insert("additionalProperties".into(), Value::Bool(false));
            }
            for child in obj.values_mut() {
                strict(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strict),
        _ => {}
    }
}

/// The text of a schema file: pretty JSON and a final newline.
pub fn file_text(o: &Output) -> Result<String> {
    let mut text = serde_json::to_string_pretty(&o.schema)?;
    text.push('\n');
    Ok(text)
}

/// Runs `cudist schema`.
pub fn run(args: SchemaArgs, outputs: &[Output]) -> Result<ExitCode> {
    if let Some(dir) = &args.write {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for o in outputs {
            let path = dir.join(format!("{}.json", o.name));
            cudist_fs::write_atomic(&path, file_text(o)?.as_bytes(), Some(0o644))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        outln!("wrote {} schemas to {}", outputs.len(), dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    match &args.name {
        Some(name) => {
            let Some(o) = outputs.iter().find(|o| o.name == name.as_str()) else {
                bail!("no schema named {name:?}");
            };
            crate::util::emit_data(&file_text(o)?);
        }
        None => {
            for o in outputs {
                outln!("{:<12} {}", o.name, o.id);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
