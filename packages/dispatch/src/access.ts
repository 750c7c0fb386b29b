import type { PrincipalKind } from '@svc/api';
import { DomainError, type Principal } from '@svc/kit';

/** Who may call an operation: the principal kinds, and whether it changes authority. */
export interface Access {
  principals: PrincipalKind[];
  /** Changes authority (grants, owners, settings, signing keys, hosts): only a person may call it. */
  authority: boolean;
}

/**
 * The principal rules, the same for every front: an authority-changing operation needs a person
 * (403 `human_principal_required`), and only the declared kinds may call at all (403
 * `principal_not_allowed`). The system principal (the platform's own calls) passes.
 */
export function checkPrincipal(principal: Principal, access: Access): void {
  const kind = principal.kind;
  if (access.authority && kind !== 'human') {
    throw new DomainError(
      'forbidden',
      'human_principal_required',
      'This operation changes authority and must be made by a person, not an agent or host key.',
    );
  }
  if (kind !== 'system' && !access.principals.includes(kind)) {
    throw new DomainError('forbidden', 'principal_not_allowed', `A ${kind} key cannot call this operation.`);
  }
}
