"""Text datasets (issue 31): a JSONL of prompts (``prompts_jsonl``) or a plain-text corpus (``text_corpus``),
stored as the text the user uploaded and tokenized at job time in the worker with the golden model's tokenizer
(``ReadOptions.tokenize``): this package only checks and parses the text (``parse``) and never imports a
tokenizer, so the API that describes an upload loads none."""
