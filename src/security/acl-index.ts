/**
 * The ACLs of one resource type, indexed for authorization: LITERAL patterns by name, PREFIXED
 * patterns in a trie of their names, and within each pattern the ACLs by principal. A lookup for a
 * resource name walks the trie along the name, so it costs O(length of the name + ACLs of the
 * asking principal and of `User:*` on the matching patterns), whatever the number of ACLs; Kafka's
 * sorted set with its prefix scan costs O(log n) per step instead.
 */
import { PatternType, type StandardAcl, WILDCARD_RESOURCE } from './acl.ts'

/** The ACLs on one resource pattern, by the principal text each names (`User:alice`, `User:*`). */
export class AclBucket {
  readonly #byPrincipal = new Map<string, StandardAcl[]>()
  #size = 0

  get size(): number {
    return this.#size
  }

  add(acl: StandardAcl): void {
    const list = this.#byPrincipal.get(acl.principal)
    if (list === undefined) this.#byPrincipal.set(acl.principal, [acl])
    else list.push(acl)
    this.#size++
  }

  /** Removes an ACL added before (the same object); false if it is not here. */
  remove(acl: StandardAcl): boolean {
    const list = this.#byPrincipal.get(acl.principal)
    const at = list?.indexOf(acl) ?? -1
    if (list === undefined || at < 0) return false
    list.splice(at, 1)
    if (list.length === 0) this.#byPrincipal.delete(acl.principal)
    this.#size--
    return true
  }

  /** The ACLs that name this principal text. */
  forPrincipal(principal: string): readonly StandardAcl[] {
    return this.#byPrincipal.get(principal) ?? []
  }

  all(): IterableIterator<StandardAcl> {
    return [...this.#byPrincipal.values()].flat().values()
  }
}

interface TrieNode {
  children: Map<string, TrieNode> | undefined
  bucket: AclBucket | undefined
}

function trieNode(): TrieNode {
  return { children: undefined, bucket: undefined }
}

/** PREFIXED patterns by name, one UTF-16 code unit per level (Java's String.startsWith compares those). */
class PrefixTrie {
  readonly #root = trieNode()

  /** The bucket of exactly this prefix, made if missing. */
  bucketFor(prefix: string): AclBucket {
    let node = this.#root
    for (const unit of codeUnits(prefix)) {
      node.children ??= new Map()
      let child = node.children.get(unit)
      if (child === undefined) {
        child = trieNode()
        node.children.set(unit, child)
      }
      node = child
    }
    node.bucket ??= new AclBucket()
    return node.bucket
  }

  /** The bucket of exactly this prefix, if any. */
  find(prefix: string): AclBucket | undefined {
    let node: TrieNode | undefined = this.#root
    for (let i = 0; i < prefix.length && node !== undefined; i++) node = node.children?.get(prefix[i]!)
    return node?.bucket
  }

  /** Every non-empty bucket whose prefix starts `name` (the empty prefix included), shortest first. */
  collectPrefixesOf(name: string, out: AclBucket[]): void {
    let node: TrieNode | undefined = this.#root
    for (let i = 0; node !== undefined; i++) {
      if (node.bucket !== undefined && node.bucket.size > 0) out.push(node.bucket)
      node = i < name.length ? node.children?.get(name[i]!) : undefined
    }
  }

  /** Drops the empty nodes on the path of `prefix` after a removal. */
  prune(prefix: string): void {
    const path: TrieNode[] = [this.#root]
    for (let i = 0; i < prefix.length; i++) {
      const next = path[i]!.children?.get(prefix[i]!)
      if (next === undefined) return
      path.push(next)
    }
    for (let depth = prefix.length; depth > 0; depth--) {
      const node = path[depth]!
      if (node.bucket !== undefined && node.bucket.size > 0) return
      node.bucket = undefined
      if (node.children !== undefined && node.children.size > 0) return
      path[depth - 1]!.children!.delete(prefix[depth - 1]!)
    }
    if (this.#root.bucket?.size === 0) this.#root.bucket = undefined
  }
}

function* codeUnits(text: string): Generator<string> {
  for (let i = 0; i < text.length; i++) yield text[i]!
}

/** The ACLs of one resource type. */
export class ResourceTypeIndex {
  readonly #literal = new Map<string, AclBucket>()
  readonly #prefixed = new PrefixTrie()
  readonly #byPrincipal = new Map<string, Set<StandardAcl>>()

  add(acl: StandardAcl): void {
    this.#bucketFor(acl).add(acl)
    let set = this.#byPrincipal.get(acl.principal)
    if (set === undefined) {
      set = new Set()
      this.#byPrincipal.set(acl.principal, set)
    }
    set.add(acl)
  }

  remove(acl: StandardAcl): void {
    this.#bucketFor(acl).remove(acl)
    if (acl.patternType === PatternType.Prefixed) this.#prefixed.prune(acl.resourceName)
    else if (this.#literal.get(acl.resourceName)?.size === 0) this.#literal.delete(acl.resourceName)
    const set = this.#byPrincipal.get(acl.principal)
    set?.delete(acl)
    if (set?.size === 0) this.#byPrincipal.delete(acl.principal)
  }

  #bucketFor(acl: StandardAcl): AclBucket {
    if (acl.patternType === PatternType.Prefixed) return this.#prefixed.bucketFor(acl.resourceName)
    let bucket = this.#literal.get(acl.resourceName)
    if (bucket === undefined) {
      bucket = new AclBucket()
      this.#literal.set(acl.resourceName, bucket)
    }
    return bucket
  }

  /** The buckets whose patterns apply to a resource name: its literal, the wildcard, every prefix of it. */
  bucketsMatching(name: string): AclBucket[] {
    const out: AclBucket[] = []
    const literal = this.#literal.get(name)
    if (literal !== undefined && literal.size > 0) out.push(literal)
    const wildcard = name === WILDCARD_RESOURCE ? undefined : this.#literal.get(WILDCARD_RESOURCE)
    if (wildcard !== undefined && wildcard.size > 0) out.push(wildcard)
    this.#prefixed.collectPrefixesOf(name, out)
    return out
  }

  /** The bucket of exactly this pattern, if any. */
  bucketOf(name: string, patternType: PatternType): AclBucket | undefined {
    return patternType === PatternType.Prefixed ? this.#prefixed.find(name) : this.#literal.get(name)
  }

  /** The ACLs of this type that name this principal text. */
  forPrincipal(principal: string): ReadonlySet<StandardAcl> {
    return this.#byPrincipal.get(principal) ?? EMPTY
  }
}

const EMPTY: ReadonlySet<StandardAcl> = new Set()
