import { seal, unseal, type Sealed } from "@feeds/kit";

// Signing secrets at rest: AES-256-GCM under FEEDS_WEBHOOK_KEY (kit/src/crypto.ts, as tenancy
// seals api secrets under its own key). The destination's tenant and id are the associated data,
// so a sealed secret copied onto another destination's record does not open there.

/** Which destination a secret belongs to. */
export interface SecretOwner {
  _id: string;
  tenant_id: string;
}

export interface SecretBox {
  seal(owner: SecretOwner, secret: string): Sealed;
  /** Throws when the key or the owner is not the one it was sealed with. */
  open(owner: SecretOwner, sealed: Sealed): string;
}

const aad = (o: SecretOwner) => `webhook-destination:${o.tenant_id}:${o._id}`;

export function createSecretBox(key: Buffer): SecretBox {
  return {
    seal: (owner, secret) => seal(key, secret, aad(owner)),
    open: (owner, sealed) => unseal(key, sealed, aad(owner)),
  };
}
