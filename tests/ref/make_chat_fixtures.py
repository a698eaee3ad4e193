#!/usr/bin/env python3
"""Chat-template fixtures for tests/test_chat.c, made with transformers' own Jinja environment (the one
apply_chat_template compiles templates in) and its tokenizers.

    pip install transformers jinja2 tokenizers
    python3 tests/ref/make_chat_fixtures.py          (from the repository root)

templates/*.jinja are written after the published chat templates of Qwen2.5, Qwen3, Llama-3.1, Llama-2,
Mistral, Zephyr, Gemma and Phi-3 (qwen2_generation marks the assistant's text with {% generation %}), and
INLINE below are small templates that each press on one corner of Jinja. It writes cases.txt:
    X NAME            the template templates/NAME.jinja      J HEX   an inline template (UTF-8 in hex)
    C HEX             the variables, a JSON object           T HEX   the text transformers renders
    E HEX             transformers refused (its message)     S a b   {% generation %} spans, in bytes
    K TOKENIZER NAME  then C, I (the ids apply_chat_template(tokenize=True) gives) and M (the mask), or E
                      where the rule below cannot find an assistant turn
    U TOKENIZER NAME EOT  then C, I and M: such a refused conversation as zt_tokenize_file makes it with an
                      end-of-text id, each assistant turn an example of its own (below), EOT between them
                      and after the last (learned)
The mask is transformers' assistant_masks for a template with {% generation %}; otherwise the rule zt
documents, worked out here in Python: each assistant message's span is what the conversation up to it
adds to the conversation before it rendered with add_generation_prompt, as far as the whole conversation
agrees, and a token is learned when it overlaps a span (transformers' rule for its masks). A template
that renders an earlier turn differently once later messages follow (reasoning templates drop its
thinking) has no such spans; unrolled, assistant turn i is the conversation up to it as the template
renders it (apply_chat_template's ids), and only what it adds to its prompt is learned.
"""
import json
import os
import re

from transformers import PreTrainedTokenizerFast
from transformers.utils.chat_template_utils import (_alias_reasoning_fields, _compile_jinja_template,
                                                    _render_with_assistant_indices)

ROOT = os.path.dirname(os.path.abspath(__file__))
HERE = os.path.join(ROOT, "chat")
TOKENIZERS = os.path.join(ROOT, "tokenizers")

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city, now.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "é 中文"}},
                          "required": ["city"]}}}

CHAT = [
    {"role": "system", "content": "You are brief. 简洁。"},
    {"role": "user", "content": "Hi \"there\"!\n  How are you?  "},
    {"role": "assistant", "content": "  Fine, thanks: café, naïve, 東京。  "},
    {"role": "user", "content": "What is 12+30?"},
    {"role": "assistant", "content": "42"},
]
NO_SYSTEM = CHAT[1:]
TOOLS_CHAT = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
    {"role": "tool", "content": "second result"},
    {"role": "assistant", "content": "It is 21.5 degrees and clear."},
]
THINKING = [
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
    {"role": "user", "content": "and 3+3?"},
    {"role": "assistant", "content": "6", "reasoning_content": "add again"},
]
NOT_ALTERNATING = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]

# (template, messages, extra variables)
RENDER = [(name, msgs, extra) for name in
          ["qwen2", "qwen2_generation", "llama3", "llama2", "mistral", "zephyr", "gemma", "phi3", "qwen3"]
          for msgs, extra in [(CHAT, {}), (NO_SYSTEM, {}), (NO_SYSTEM[:1], {"add_generation_prompt": True}),
                              (NOT_ALTERNATING, {})]]
RENDER += [("qwen2", TOOLS_CHAT, {"tools": [WEATHER]}), ("llama3", TOOLS_CHAT[:2], {"tools": [WEATHER]}),
           ("llama3", NO_SYSTEM, {"date_string": "3 Dec 2026", "builtin_tools": ["brave_search", "code_interpreter"]}),
           ("qwen3", THINKING, {}), ("qwen3", THINKING[:1], {"add_generation_prompt": True, "enable_thinking": False}),
           ("qwen3", THINKING[:1] + [{"role": "assistant", "content": "4", "reasoning": "under another name"}], {})]

INLINE = [
    "{{ 1/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 1e20 }} {{ 0.1+0.2 }} {{ 3.0 }} {{ 1e-5 }} {{ 0.0001 }} "
    "{{ 123.456 }} {{ -0.0 }} {{ 1e16 }} {{ 1.5e15 }} {{ [1,\"a\",none,true] }} {{ {\"a\":1} }} {{ 10 / 4 }} {{ 2 ** 0.5 }} "
    "{{ 7 % -3 }} {{ -7.5 // 2 }} {{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ 'a' ~ 2 * 3 }} {{ -2 ** 2 }} {{ not true }}",
    "{{ \"abc\"[::-1] }} {{ \"héllo\"[1] }} {{ \"héllo\"|length }} {{ [1,2,3][-1] }} {{ [1,2][5] }}| {{ \"héllo\"[1:3] }} "
    "{{ [1,2,3,4][::2] }} {{ [1,2,3][-2:] }} {{ \"abc\"[-5:10] }} {{ [1,2,3][::-1] }} {{ \"añb\"[::-1] }}",
    "{{ \" a b \".split() }} {{ \"a,b,,c\".split(\",\") }} {{ \"x\" * 3 }} {{ \"It's\" }} {{ [\"It's\"] }} "
    "{{ [\"a\\\"b\", \"c'd\\\"e\"] }} {{ \"a b c\".split(\" \", 1) }} {{ none }}{{ nothing }}|{{ (1,2) }}|{{ (1,) }}|"
    "{{ \"a\" ~ 1 ~ none }}",
    "  {% if true %}\n  x\n  {%- endif %}\n{# c #}\n  {{ 1 }}  \n{%+ if 1 %}y{% endif %}\n   {%- if 1 -%}   z   "
    "{%- endif -%}  \n\n w {# q -#}  \n v\n\ta\n  {% if true %}\n    b\n  {% endif %}\nc\n{% for i in [1] %}\n  {{ i }}\n"
    "{% endfor %}\nd\n\n",
    "{{ 1 == 1.0 }} {{ true == 1 }} {{ \"a\" < \"b\" }} {{ [1,2] < [1,3] }} {{ 5 if false }}| {{ 1 < 2 < 3 }} "
    "{{ 3 > 2 > 5 }} {{ \"b\" in \"abc\" }} {{ 2 not in [1,2] }} {{ \"k\" in {\"k\":1} }} {{ 'a' if 0 else 'b' }}",
    "{{ x|tojson }} {{ x|tojson(indent=2) }} {{ x|tojson(sort_keys=true) }} {{ x|tojson(separators=(\",\",\":\")) }} "
    "{{ \"é\\u2028\\x7f\"|tojson }}",
    "{{ [1,2]|join }} {{ x|selectattr(\"a\")|list }} {{ x|map(attribute=\"a\")|join(\",\") }} {{ none|default(\"d\") }} "
    "{{ u|default(\"d\") }} {{ \"\"|default(\"d\", true) }} {{ x|rejectattr(\"a\")|list|length }} "
    "{{ x|selectattr(\"a\", \"equalto\", 1)|list }} {{ [3,1,2]|sort }} {{ [\"b\",\"A\",\"c\"]|sort }} "
    "{{ [3,1,2]|sort(reverse=true) }} {{ x|map(attribute=\"b\", default=9)|list }} {{ [1,2,3]|select(\"odd\")|list }} "
    "{{ [1,2,3]|reject(\"odd\")|list }} {{ ['a','b']|map('upper')|join }}",
    "{% macro m(a, b=2) %}[{{a}}{{b}}]{% endmacro %}{{ m(1) }}{{ m(1, b=3) }}{{ m(\"x\", \"y\") }}"
    "{% for a, b in {\"x\":1,\"y\":2}.items() %}{{loop.index}}{{a}}{{b}}{{ loop.last }}{{ loop.first }}{{loop.revindex}}"
    "{% endfor %}{% for i in [] %}{% else %}E{% endfor %}{% for i in range(10) if i % 3 == 0 %}{{ i }}{{ loop.length }}"
    "{% endfor %}{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 4 %}{% break %}{% endif %}"
    "{{ i }}{% endfor %}{% for i in [1,2,3] %}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    "{% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m.role == \"user\" %}{% set ns.found = true %}"
    "{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}{% set x = 0 %}{% for i in range(3) %}"
    "{{ x }}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}{% if true %}{% set y = 5 %}{% endif %}{{ y }}",
    "{{ \"  hi  \"|trim }}|{{ \"xxhixx\".strip(\"x\") }}|{{ \"  hi\".lstrip() }}|{{ \"hi  \".rstrip() }}|"
    "{{ \"Hello World\"|upper }}|{{ \"Hello\"|lower }}|{{ \"hello world\"|title }}|{{ \"hello World\"|capitalize }}|"
    "{{ \"abc\".startswith(\"a\") }}{{ \"abc\".endswith(\"bc\") }}{{ \"abc\".startswith((\"x\",\"a\")) }}|"
    "{{ \"a-b-c\".replace(\"-\", \"+\") }}|{{ \"abcabc\".find(\"c\") }}|{{ \"aaa\".count(\"a\") }}|{{ \"\\u3000 x\\n\".strip() }}|",
    "{{ messages[0][\"role\"] }} {{ messages[0].role }} {{ messages[-1].content }} {{ messages|length }} "
    "{{ messages[1:]|length }} {{ (messages|first).role }} {{ (messages|last).content }} {{ messages[0].get(\"x\", \"dflt\") }} "
    "{{ messages[0].keys()|list }} {{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(' | ') }} "
    "{{ messages|map(attribute='role')|unique|list }}",
    "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ none is none }} {{ \"s\" is string }} {{ 1 is number }} "
    "{{ {} is mapping }} {{ [1] is iterable }} {{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 1 is in [1,2] }} "
    "{{ x is not none }} {{ true is true }} {{ 3 is integer }} {{ 3.5 is float }} {{ \"a\" is eq \"a\" }} {{ 'ab' is lower }}",
    "{{ x|items|list }} {{ x|dictsort }} {{ [1,1,2]|unique|list }} {{ [1,2,3]|sum }} {{ [4,2,8]|min }} {{ [4,2,8]|max }} "
    "{{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ \"3\"|int + 1 }} {{ \"x\"|int }} {{ \"2.5\"|float }} "
    "{{ 7|string ~ \"!\" }} {{ \"a\\nb\\n\\nc\"|indent(2) }} {{ \"a b  c\"|wordcount }} {{ [1,2]|reverse|list }} "
    "{{ \"abc\"|reverse }} {{ [1,2]|first }} {{ \"x\"|list }}",
    "{% set s %}inner {{ 1+1 }}{% endset %}[{{ s }}]{{ 'a' 'b' }}{{ \"\\x41\\u00e9\\t|\\n\" }}{{ 1_000 }}"
    "{{ dict(a=1, b=2) }} {{ namespace(a=1).a }} {{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }}"
    "{% if x %}{% elif y %}Y{% elif z %}Z{% else %}E{% endif %}|{% if not x and not y or z %}T{% endif %}",
    "{{ m.content[0].text if m.content is not string else m.content }} {{ m.tool_calls is defined }} "
    "{{ m['tool_calls'] is defined }} {{ m.items is defined }}",
    # from a differential review against transformers: each of these once differed
    "{% raw %}{{ x }} {% if %}{% endraw %}|{{ [[1, [2, 3]]].0.1 }}|{{ messages.0.role }}|\u3000 {%- if true %}x{% endif %}\u00a0"
    "\n\u2003 {% if true %}y{% endif %}|{{ 'a\\\nb' }}|{{ 1_000 + 2 }}",
    "{{ x|tojson(ensure_ascii=true) }}|{{ x|tojson(indent='\t') }}|{{ {1: 'a', true: 'b', none: 'c'}|tojson }}|"
    "{{ x|tojson(indent=0) }}|{{ 'é😀'|tojson(true) }}",
    "{{ 'a\nb\n'|indent(2) }}|{{ '\nfoo'|indent(2, true) }}|{{ 'a\r\nb\u2028c'|indent(1) }}|{{ ''|indent(2, true) }}|"
    "{{ 'x\n\ny'|indent(3, blank=true) }}",
    "{{ ['b', 'A', 'a', 'B']|unique|list }} {{ ['b', 'A', 'a', 'B']|sort }} {{ ['b', 'A', 'a', 'B']|sort(case_sensitive=true) }} "
    "{{ {'b': 1, 'A': 2}|dictsort }} {{ {'b': 1, 'A': 2}|dictsort(true) }} {{ {'b': 2, 'a': 1}|dictsort(by='value') }} "
    "{{ messages|max(attribute='content') }} {{ ['B', 'a']|min }} {{ 'hello-world (x) o\\'neil 1st'|title }} "
    "{{ 'hello-world (x) o\\'neil 1st'.title() }}",
    "{{ 'aaaa'.count('aa') }} {{ 'héé'.count('') }} {{ 'hello'.find('l', 3) }} {{ 'abc'.startswith('b', 1) }} "
    "{{ 'a b  c  '.split(None, 1) }} {{ '-'.join('abc') }} {{ 'Hello world, this-is  a test_case 3.5'|wordcount }} "
    "{{ 5|round }} {{ 1234|round(-2) }} {{ 2.675|round(2) }} {{ 4.0 is even }} {{ '123' is lower }} {{ nothing is iterable }} "
    "{{ 'abc'.isalpha() }} {{ 'a\nb'.splitlines() }} {{ 'abcabc'.rfind('b') }} {{ 'abc'.removeprefix('a') }} "
    "{{ 6.0 % -3 }} {{ 0.1 % 0.01 }} {{ -7.5 // 2 }} {{ 3 * 'ab' }} {{ 9223372036854775807 }} {{ 1 ** 999999999999 }}",
    "{% for i in [1, 2] %}{% macro m() %}{{ i }}{{ loop.index }}{% endmacro %}{{ m() }}{% endfor %}|"
    "{% set y %}{% set inner = 1 %}b{% endset %}{{ y }}{{ inner is defined }}|{{ ('' * 9000000000000000000)|length }}",
    "{{ raise_exception('boom: ' ~ 3) }}",
    "{% generation %}A{{ 1 }}{% endgeneration %}B{% for i in range(2) %}{% generation %}<{{ i }}>é{% endgeneration %}"
    "{% endfor %}{% generation %}{% endgeneration %}",
]
INLINE_VARS = {"tools": None, "documents": None, "add_generation_prompt": False, "x": {"b": [1, 2.5, None, True, "é\n\"\t\x01"], "a": {}, "c": {"z": [], "y": {"q": 1}}},
               "messages": CHAT, "m": {"role": "assistant", "content": [{"type": "text", "text": "multi"}]}}

TOKENIZE = [("qwen2", "qwen2", CHAT, {}), ("qwen2", "qwen2", TOOLS_CHAT, {"tools": [WEATHER]}),
            ("qwen2", "qwen2_generation", CHAT, {}), ("qwen2", "qwen3", THINKING[:2], {}),
            ("qwen2", "qwen3", THINKING, {}),
            ("llama2", "llama2", CHAT, {}), ("mistral", "mistral", NO_SYSTEM, {}),
            ("gpt2", "phi3", CHAT, {"eos_token": "<|endoftext|>"}), ("gpt2", "zephyr", CHAT, {"eos_token": "<|endoftext|>"}),
            ("llama3", "gemma", NO_SYSTEM, {"bos_token": "<|begin_of_text|>"})]


def has_generation(template):
    return re.search(r"\{%-?\s*generation\s*-?%\}", template) is not None


def hexs(s):
    return s.encode("utf-8").hex()


def normalized(v):
    """what apply_chat_template does to the messages first: null fields dropped, reasoning under its names"""
    msgs = [{k: x for k, x in m.items() if x is not None} for m in v["messages"]]
    return dict(v, messages=_alias_reasoning_fields(msgs))


def variables(msgs, extra):  # as given (zt normalizes them itself)
    v = {"messages": msgs, "tools": None, "documents": None, "add_generation_prompt": False}
    v.update(SPECIAL)
    v.update(extra)
    return v


def render(template, v):
    return _compile_jinja_template(template).render(**v)


def byte_at(text, i):
    return len(text[:i].encode("utf-8"))


def prefix_spans(template, v):
    """each assistant message's span in the whole text (characters), by rendering prefixes"""
    v = normalized(v)
    full = render(template, v)
    spans = []
    for i, m in enumerate(v["messages"]):
        if m["role"] != "assistant":
            continue
        prompt = render(template, dict(v, messages=v["messages"][:i], add_generation_prompt=True))
        turn = render(template, dict(v, messages=v["messages"][:i + 1], add_generation_prompt=False))
        if not full.startswith(prompt):
            raise ValueError(f"message {i}: its prompt is not where the whole conversation starts")
        same = 0
        while same < len(turn) and same < len(full) and turn[same] == full[same]:
            same += 1
        if m.get("content", "").strip() not in full[len(prompt):same]:
            raise ValueError(f"message {i}: the whole conversation rewrites it")
        if same > len(prompt):
            spans.append((len(prompt), same))
    return full, spans


def unrolled(tok, template, v, eot):
    """each assistant turn as its own example, the whole conversation up to it, only that turn learned"""
    v = normalized(v)
    msgs = v["messages"]
    ids, mask = [], []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        if ids:
            ids.append(eot), mask.append(1)
        prompt = render(template, dict(v, messages=msgs[:i], add_generation_prompt=True))
        text = render(template, dict(v, messages=msgs[:i + 1], add_generation_prompt=False))
        assert text.startswith(prompt), f"message {i}: even as the last turn, its prompt is not where it starts"
        enc = tok(text, add_special_tokens=False)
        kwargs = {k: v[k] for k in v if k not in ("messages", "tools", "documents", "add_generation_prompt")}
        assert enc["input_ids"] == tok.apply_chat_template(msgs[:i + 1], chat_template=template, tools=v["tools"],
                                                           tokenize=True, return_dict=True, **kwargs)["input_ids"]
        ids += enc["input_ids"]
        mask += [int(e > len(prompt) and s < len(text)) for s, e in enc.encodings[0].offsets]
    return ids + [eot], mask + [1]


def main():
    out = []
    templates = {}
    for name in sorted(os.listdir(os.path.join(HERE, "templates"))):
        with open(os.path.join(HERE, "templates", name), encoding="utf-8") as f:
            templates[name[:-6]] = f.read()
    for name, msgs, extra in RENDER:
        v = variables(msgs, extra)
        out.append(f"X {name}")
        out.append("C " + hexs(json.dumps(v, ensure_ascii=False)))
        try:
            text, spans = _render_with_assistant_indices(_compile_jinja_template(templates[name]), **normalized(v))
            out.append("T " + hexs(text))
            if has_generation(templates[name]):
                out.append("S " + " ".join(f"{byte_at(text, a)} {byte_at(text, b)}" for a, b in spans))
        except Exception as e:  # raise_exception and friends
            out.append("E " + hexs(str(e)))
    for t in INLINE:
        v = dict(INLINE_VARS, **SPECIAL)
        out.append("J " + hexs(t))
        out.append("C " + hexs(json.dumps(v, ensure_ascii=False)))
        try:
            text, spans = _render_with_assistant_indices(_compile_jinja_template(t), **v)
            out.append("T " + hexs(text))
            if has_generation(t):
                out.append("S " + " ".join(f"{byte_at(text, a)} {byte_at(text, b)}" for a, b in spans))
        except Exception as e:
            out.append("E " + hexs(str(e)))
    for tok_name, name, msgs, extra in TOKENIZE:
        tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(TOKENIZERS, tok_name, "tokenizer.json"))
        v = variables(msgs, extra)
        template = templates[name]
        if has_generation(template):
            got = tok.apply_chat_template(msgs, chat_template=template, tools=v["tools"], tokenize=True,
                                          return_dict=True, return_assistant_tokens_mask=True,
                                          **{k: v[k] for k in v if k not in ("messages", "tools", "documents",
                                                                             "add_generation_prompt")})
            ids, mask = got["input_ids"], got["assistant_masks"]
        else:
            try:
                full, spans = prefix_spans(template, v)
            except ValueError as e:  # zt must refuse it too
                out += [f"K {tok_name} {name}", "C " + hexs(json.dumps(v, ensure_ascii=False)), "E " + hexs(str(e))]
                print(f"{tok_name:8s} {name:18s} refused: {e}")
                eot = tok.convert_tokens_to_ids("<|endoftext|>")
                ids, mask = unrolled(tok, template, v, eot)
                out += [f"U {tok_name} {name} {eot}", "C " + hexs(json.dumps(v, ensure_ascii=False)),
                        "I " + " ".join(map(str, ids)), "M " + "".join(map(str, mask))]
                print(f"{tok_name:8s} {name:18s} unrolled: {len(ids):4d} tokens, {sum(mask):4d} learned")
                continue
            enc = tok(full, add_special_tokens=False)
            ids = enc["input_ids"]
            assert ids == tok.apply_chat_template(msgs, chat_template=template, tools=v["tools"], tokenize=True,
                                                  return_dict=True,
                                                  **{k: v[k] for k in v if k not in ("messages", "tools", "documents",
                                                                                     "add_generation_prompt")})["input_ids"]
            mask = [int(any(e > a and s < b for a, b in spans)) for s, e in enc.encodings[0].offsets]
        out.append(f"K {tok_name} {name}")
        out.append("C " + hexs(json.dumps({k: v[k] for k in v if k != "add_generation_prompt"}, ensure_ascii=False)))
        out.append("I " + " ".join(map(str, ids)))
        out.append("M " + "".join(map(str, mask)))
        print(f"{tok_name:8s} {name:18s} {len(ids):4d} tokens, {sum(mask):4d} learned")
    with open(os.path.join(HERE, "cases.txt"), "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"{len(RENDER)} renders of {len(templates)} templates, {len(INLINE)} inline templates, {len(TOKENIZE)} "
          f"tokenized conversations -> {os.path.relpath(os.path.join(HERE, 'cases.txt'))}")


if __name__ == "__main__":
    main()
