//! Discovery endpoints of real local servers, so that detection is tested against the same
//! answers the real ones give: Ollama's `/api/tags`, `/api/ps` and `/api/show`, llama.cpp's
//! `/props`, and the `/v1/models` list both serve. Chat requests still follow the script.

use serde_json::{Value, json};

/// Which server the mock pretends to be, besides serving its script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emulation {
    Ollama { models: Vec<OllamaModel> },
    LlamaCpp { model: String, n_ctx: u64 },
}

/// One model of an emulated Ollama.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OllamaModel {
    pub name: String,
    /// `model_info.<arch>.context_length`: what it was trained for.
    pub context_length: u64,
    /// `num_ctx` in its parameters, if its Modelfile sets one.
    pub num_ctx: Option<u64>,
    /// Loaded (listed by `/api/ps`) with this context length.
    pub loaded_context: Option<u64>,
    /// `tools` among its capabilities.
    pub tools: bool,
}

impl OllamaModel {
    /// A model that can call tools, not loaded, with no `num_ctx`.
    pub fn new(name: &str, context_length: u64) -> Self {
        Self {
            name: name.to_string(),
            context_length,
            num_ctx: None,
            loaded_context: None,
            tools: true,
        }
    }

    pub fn loaded(mut self, context: u64) -> Self {
        self.loaded_context = Some(context);
        self
    }

    pub fn without_tools(mut self) -> Self {
        self.tools = false;
        self
    }
}

impl Emulation {
    /// Parses the command-line form: `ollama:NAME[:LOADED_CTX]` (a loaded model; add
    /// `:notools` for one without tool support) or `llama.cpp:NAME:N_CTX`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').collect();
        let number = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| format!("`{s}` is not a number in --emulate {text}"))
        };
        match parts.as_slice() {
            ["ollama", name, rest @ ..] => {
                // Ollama names carry a tag after a colon (`qwen3:8b`): numbers and `notools`
                // are ours, anything else is part of the name.
                let mut name = name.to_string();
                let mut model = OllamaModel::new("", 40_960);
                for part in rest {
                    if *part == "notools" {
                        model.tools = false;
                    } else if let Ok(n) = part.parse::<u64>() {
                        model.loaded_context = Some(n);
                    } else {
                        name = format!("{name}:{part}");
                    }
                }
                model.name = name;
                Ok(Self::Ollama {
                    models: vec![model],
                })
            }
            ["llama.cpp", name, n_ctx] => Ok(Self::LlamaCpp {
                model: name.to_string(),
                n_ctx: number(n_ctx)?,
            }),
            _ => Err(format!(
                "--emulate {text}: use ollama:NAME[:LOADED_CTX][:notools] or llama.cpp:NAME:N_CTX"
            )),
        }
    }

    /// The answer to a discovery request, or `None` when `path` is not one.
    pub(crate) fn answer(&self, method: &str, path: &str, body: &Value) -> Option<Value> {
        match (self, method, path) {
            (Self::Ollama { models }, "GET", "/api/tags") => Some(json!({
                "models": models.iter().map(|m| json!({
                    "name": m.name, "model": m.name, "size": 5_200_000_000u64,
                    "details": {"format": "gguf", "family": "qwen3"}
                })).collect::<Vec<_>>()
            })),
            (Self::Ollama { models }, "GET", "/api/ps") => Some(json!({
                "models": models.iter().filter_map(|m| Some(json!({
                    "name": m.name, "model": m.name, "context_length": m.loaded_context?
                }))).collect::<Vec<_>>()
            })),
            (Self::Ollama { models }, "POST", "/api/show") => {
                let asked = body.get("model").or_else(|| body.get("name"))?.as_str()?;
                let model = models.iter().find(|m| m.name == asked)?;
                let mut parameters = "stop \"<|im_end|>\"".to_string();
                if let Some(n) = model.num_ctx {
                    parameters.push_str(&format!("\nnum_ctx {n}"));
                }
                let mut capabilities = vec!["completion"];
                if model.tools {
                    capabilities.push("tools");
                }
                Some(json!({
                    "parameters": parameters,
                    "model_info": {
                        "general.architecture": "qwen3",
                        "qwen3.context_length": model.context_length
                    },
                    "capabilities": capabilities
                }))
            }
            (Self::Ollama { models }, "GET", "/v1/models") => Some(json!({
                "object": "list",
                "data": models.iter().map(|m| json!({"id": m.name, "object": "model"})).collect::<Vec<_>>()
            })),
            (Self::LlamaCpp { model, n_ctx }, "GET", "/props") => Some(json!({
                "default_generation_settings": {"n_ctx": n_ctx, "temperature": 0.8},
                "total_slots": 1,
                "model_path": format!("/models/{model}.gguf"),
                "chat_template": "{{ messages }}"
            })),
            (Self::LlamaCpp { model, n_ctx }, "GET", "/v1/models") => Some(json!({
                "object": "list",
                "data": [{"id": model, "object": "model", "meta": {"n_ctx_train": n_ctx}}]
            })),
            _ => None,
        }
    }
}
