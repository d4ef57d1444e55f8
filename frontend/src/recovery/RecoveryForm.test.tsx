import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { keys } from "../api/keys";
import type { Model } from "../api/types";
import { RecoveryForm } from "./RecoveryForm";
import { DEFAULT_ADAROUND } from "./training";

const model = (id: string, name: string, format: string) => ({ id, name, format, status: "ready" }) as unknown as Model;

const render = (modelId?: string) => {
  const client = new QueryClient();
  client.setQueryData(keys.models("p1"), [
    model("m1", "digits pt2", "torch_export"),
    model("m2", "digits ts", "torchscript"),
    model("m3", "digits onnx", "onnx"),
  ]);
  return renderToStaticMarkup(
    <QueryClientProvider client={client}>
      <RecoveryForm projectId="p1" modelId={modelId} />
    </QueryClientProvider>,
  );
};

describe("RecoveryForm", () => {
  it("offers the models recovery runs on, the configurations, and AdaRound's settings at the API's defaults", () => {
    const html = render();
    expect(html).toContain("Golden model");
    expect(html).toContain(">digits pt2</option>");
    expect(html).toContain(">digits onnx</option>");
    expect(html).not.toContain("digits ts");
    expect(html).toContain("Configuration to recover");
    expect(html).toMatch(/<option value="w4" [^>]*selected=""/);
    expect(html).toContain('aria-label="AdaRound settings"');
    expect(html).toMatch(
      new RegExp(`AdaRound iterations<input [^>]*value="${DEFAULT_ADAROUND.iterations.toString()}"`),
    );
    expect(html).toContain("Launch recovery");
  });

  it("has no model select on a model's page, and offers an ONNX model only the training-free methods", () => {
    const html = render("m3");
    expect(html).not.toContain("Golden model");
    expect(html).toContain("AdaRound");
    expect(html).not.toContain("Quantization-aware training");
  });
});
