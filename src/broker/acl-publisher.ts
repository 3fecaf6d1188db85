/**
 * The node's StandardAuthorizer, kept equal to the ACLs of the metadata image: each publication's
 * changed ACL ids are removed or added, and the whole set is reloaded when the authorizer and the
 * image disagree (a snapshot replaced the image). Null when `authorizer.class.name` is empty.
 */
import { STANDARD_AUTHORIZER_CLASS } from '../config/index.ts'
import type { ImagePublication, MetadataImage } from '../metadata/index.ts'
import type { Uuid } from '../model/index.ts'
import {
  type AclBindingFilter,
  type AuthorizerConfig,
  AuthorizerStateError,
  aclFromRecord,
  type StandardAcl,
  StandardAuthorizer,
} from '../security/index.ts'
import type { AclView } from '../server/index.ts'

/** An `authorizer.class.name` Weir cannot load. */
export class AuthorizerConfigError extends Error {
  override name = 'AuthorizerConfigError'
}

/** Whether `authorizer.class.name` names an authorizer: empty is none; StandardAuthorizer is the only one. */
export function authorizerConfigured(className: string): boolean {
  const name = className.trim()
  if (name === '') return false
  if (name !== STANDARD_AUTHORIZER_CLASS) {
    throw new AuthorizerConfigError(
      `authorizer.class.name ${name} is not supported: only ${STANDARD_AUTHORIZER_CLASS} (or empty, no authorizer)`,
    )
  }
  return true
}

export class AclPublisher implements AclView {
  readonly #config: AuthorizerConfig
  #authorizer: StandardAuthorizer | null

  constructor(configured: boolean, config: AuthorizerConfig) {
    this.#config = config
    this.#authorizer = configured ? new StandardAuthorizer(config) : null
  }

  get authorizerConfigured(): boolean {
    return this.#authorizer !== null
  }

  /** The authorizer requests will be checked with, or null without one. */
  get authorizer(): StandardAuthorizer | null {
    return this.#authorizer
  }

  acls(filter: AclBindingFilter): readonly StandardAcl[] {
    return this.#authorizer?.acls(filter).map((a) => a.acl) ?? []
  }

  onPublish(p: ImagePublication): void {
    const authorizer = this.#authorizer
    if (authorizer === null || p.changes.changedAcls.length === 0) return
    try {
      applyChanges(authorizer, p.image, p.changes.changedAcls)
      if (authorizer.aclCount === p.image.acls.size) return
    } catch (e) {
      if (!(e instanceof AuthorizerStateError)) throw e
    }
    this.#authorizer = new StandardAuthorizer(this.#config, [...p.image.acls.values()].map(aclFromRecord))
  }
}

/** Removals first, so that an ACL removed and re-created under a new id in one batch is added. */
function applyChanges(authorizer: StandardAuthorizer, image: MetadataImage, ids: readonly Uuid[]): void {
  for (const id of ids)
    if (!image.acls.has(id) && authorizer.getAcl(id) !== undefined) authorizer.removeAcl(id)
  for (const id of ids) {
    const entry = image.acls.get(id)
    if (entry !== undefined && authorizer.getAcl(id) === undefined)
      authorizer.addAcl(id, aclFromRecord(entry).acl)
  }
}
