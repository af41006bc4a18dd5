"""Small datasets made from the shared real text."""


def choice_records(wiki_extracts, n=12):
    """Real texts: context = an extract's first sentence; choices = its second sentence and others'."""
    parts = [t.split(". ") for t in wiki_extracts[:200] if t.count(". ") >= 2][: n + 3]
    out = []
    for i in range(n):
        k = 2 + i % 3  # 2, 3 or 4 choices
        wrong = [parts[(i + j) % len(parts)][1] for j in range(1, k)]
        label = i % k
        choices = wrong[:label] + [parts[i][1]] + wrong[label:]
        out.append({"text": parts[i][0], "choices": choices, "label": str(label)})
    return out
