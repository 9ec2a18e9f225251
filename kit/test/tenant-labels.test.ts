import { describe, expect, it } from "vitest";
import { createTenantLabels, OTHER_TENANT } from "../src/tenant-labels.js";

describe("bounded tenant labels", () => {
  const setup = (limit: number) => {
    const forgotten: string[] = [];
    const labels = createTenantLabels(limit, { forget: (t) => forgotten.push(t), epochMs: 1000 });
    return { labels, forgotten };
  };

  it("labels the first tenants while there is room, the rest `other`", () => {
    const { labels } = setup(2);
    expect(["a", "b", "c", "a", "d", "b"].map((t) => labels.label(t, 0))).toEqual(["a", "b", OTHER_TENANT, "a", OTHER_TENANT, "b"]);
    expect(labels.labelled().sort()).toEqual(["a", "b"]);
  });

  it("each epoch gives the labels to the highest volume and forgets the tenants that lose theirs", () => {
    const { labels, forgotten } = setup(2);
    labels.label("a", 0);
    labels.label("b", 0);
    for (let i = 0; i < 5; i++) labels.label("c", 10);
    for (let i = 0; i < 3; i++) labels.label("b", 20);
    // Epoch over: c (5) and b (4) beat a (1).
    expect(labels.label("c", 1000)).toBe("c");
    expect(forgotten).toEqual(["a"]);
    expect(labels.label("a", 1001)).toBe(OTHER_TENANT);
    expect(labels.labelled().sort()).toEqual(["b", "c"]);
  });

  it("never holds more labels than the limit, whatever the number of tenants", () => {
    const { labels } = setup(10);
    let most = 0;
    for (let i = 0; i < 5000; i++) {
      const l = labels.label(`t${i % 997}`, i);
      expect(l === OTHER_TENANT || labels.labelled().includes(l)).toBe(true);
      most = Math.max(most, labels.labelled().length);
    }
    expect(most).toBe(10);
  });

  it("a lower limit takes effect at once", () => {
    const { labels, forgotten } = setup(3);
    for (const t of ["a", "a", "b", "c"]) labels.label(t, 0);
    labels.setLimit(1);
    expect(labels.labelled()).toEqual(["a"]);
    expect(forgotten.sort()).toEqual(["b", "c"]);
  });
});
