//! Discovery endpoints of real local servers, so that detection is tested against the same
//! answers the real ones give: Ollama's `/api/tags`, `/api/ps` and `/api/show`, llama.cpp's
//! `/props`, LM Studio's `/api/v0/models`, vLLM's `/v1/models` (with `max_model_len`), and
//! the `/v1/models` list every one serves. Chat requests still follow the script, but for
//! what the real server refuses before answering: vLLM started without tool calling rejects
//! any request that offers tools, with its own error.

use serde_json::{Value, json};

/// Which server the mock pretends to be, besides serving its script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emulation {
    Ollama {
        models: Vec<OllamaModel>,
    },
    LlamaCpp {
        model: String,
        n_ctx: u64,
    },
    /// LM Studio's server (`lms server start`, port 1234).
    LmStudio {
        models: Vec<LmStudioModel>,
    },
    /// A server that lists its models at `/v1/models` and says nothing else about them
    /// (llama-cpp-python's `python -m llama_cpp.server`): no window, no capabilities.
    ModelsOnly {
        model: String,
    },
    /// `vllm serve MODEL --max-model-len N`, with `--enable-auto-tool-choice` or not.
    Vllm {
        model: String,
        max_model_len: u64,
        tools: bool,
    },
}

/// One model of an emulated LM Studio, as `/api/v0/models` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmStudioModel {
    pub id: String,
    /// `llm`, `vlm` or `embeddings`.
    pub kind: &'static str,
    /// What the model was trained for.
    pub max_context_length: u64,
    /// Loaded, with this context length (LM Studio loads with less than the maximum by
    /// default).
    pub loaded_context_length: Option<u64>,
    /// `tool_use` among its capabilities (LM Studio lists capabilities only for models that
    /// have one).
    pub tool_use: bool,
}

impl LmStudioModel {
    /// A language model that can call tools, not loaded.
    pub fn new(id: &str, max_context_length: u64) -> Self {
        Self {
            id: id.to_string(),
            kind: "llm",
            max_context_length,
            loaded_context_length: None,
            tool_use: true,
        }
    }

    pub fn loaded(mut self, context: u64) -> Self {
        self.loaded_context_length = Some(context);
        self
    }

    pub fn without_tools(mut self) -> Self {
        self.tool_use = false;
        self
    }

    pub fn embeddings(mut self) -> Self {
        self.kind = "embeddings";
        self.tool_use = false;
        self
    }
}

/// vLLM's answer to a request offering tools when it was started without tool calling.
pub const VLLM_NO_TOOLS: &str = "\"auto\" tool choice requires --enable-auto-tool-choice and \
                                  --tool-call-parser to be set";

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
    /// `:notools` for one without tool support), `llama.cpp:NAME:N_CTX`,
    /// `lmstudio:NAME:MAX_CTX[:LOADED_CTX][:notools]`, `vllm:NAME:MAX_MODEL_LEN[:notools]` or
    /// `models-only:NAME`.
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
            ["models-only", name] => Ok(Self::ModelsOnly {
                model: name.to_string(),
            }),
            ["llama.cpp", name, n_ctx] => Ok(Self::LlamaCpp {
                model: name.to_string(),
                n_ctx: number(n_ctx)?,
            }),
            ["lmstudio", name, max, rest @ ..] => {
                let mut model = LmStudioModel::new(name, number(max)?);
                for part in rest {
                    if *part == "notools" {
                        model.tool_use = false;
                    } else {
                        model.loaded_context_length = Some(number(part)?);
                    }
                }
                Ok(Self::LmStudio {
                    models: vec![model],
                })
            }
            ["vllm", name, max, rest @ ..] if rest.iter().all(|p| *p == "notools") => {
                Ok(Self::Vllm {
                    model: name.to_string(),
                    max_model_len: number(max)?,
                    tools: rest.is_empty(),
                })
            }
            _ => Err(format!(
                "--emulate {text}: use ollama:NAME[:LOADED_CTX][:notools], \
                 llama.cpp:NAME:N_CTX, lmstudio:NAME:MAX_CTX[:LOADED_CTX][:notools], \
                 vllm:NAME:MAX_MODEL_LEN[:notools] or models-only:NAME"
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
            (Self::ModelsOnly { model }, "GET", "/v1/models") => Some(json!({
                "object": "list",
                "data": [{"id": model, "object": "model", "owned_by": "me"}]
            })),
            (Self::LmStudio { models }, "GET", "/api/v0/models") => Some(json!({
                "object": "list",
                "data": models.iter().map(|m| {
                    let mut entry = json!({
                        "id": m.id, "object": "model", "type": m.kind,
                        "publisher": "lmstudio-community", "arch": "qwen3",
                        "compatibility_type": "gguf", "quantization": "Q4_K_M",
                        "state": if m.loaded_context_length.is_some() { "loaded" } else { "not-loaded" },
                        "max_context_length": m.max_context_length,
                    });
                    if let Some(loaded) = m.loaded_context_length {
                        entry["loaded_context_length"] = json!(loaded);
                    }
                    if m.tool_use {
                        entry["capabilities"] = json!(["tool_use"]);
                    }
                    entry
                }).collect::<Vec<_>>()
            })),
            (Self::LmStudio { models }, "GET", "/v1/models") => Some(json!({
                "object": "list",
                "data": models.iter().map(|m| json!({
                    "id": m.id, "object": "model", "owned_by": "organization_owner"
                })).collect::<Vec<_>>()
            })),
            (
                Self::Vllm {
                    model,
                    max_model_len,
                    ..
                },
                "GET",
                "/v1/models",
            ) => Some(json!({
                "object": "list",
                "data": [{
                    "id": model, "object": "model", "created": 1_733_500_000u64,
                    "owned_by": "vllm", "root": model, "parent": null,
                    "max_model_len": max_model_len,
                    "permission": [{
                        "id": "modelperm-0", "object": "model_permission",
                        "created": 1_733_500_000u64, "allow_create_engine": false,
                        "allow_sampling": true, "allow_logprobs": true,
                        "allow_search_indices": false, "allow_view": true,
                        "allow_fine_tuning": false, "organization": "*", "group": null,
                        "is_blocking": false
                    }]
                }]
            })),
            _ => None,
        }
    }

    /// What the emulated server refuses before the script is asked: vLLM without tool calling
    /// answers 400 to any chat request that offers tools.
    pub(crate) fn refusal(&self, path: &str, body: &Value) -> Option<(u16, Value)> {
        match self {
            Self::Vllm { tools: false, .. }
                if path == "/v1/chat/completions"
                    && body
                        .get("tools")
                        .and_then(Value::as_array)
                        .is_some_and(|t| !t.is_empty()) =>
            {
                Some((
                    400,
                    json!({
                        "object": "error", "message": VLLM_NO_TOOLS,
                        "type": "BadRequestError", "param": null, "code": 400
                    }),
                ))
            }
            _ => None,
        }
    }
}
